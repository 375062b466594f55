/* Optional C accelerator for tnp.ndarray (pure-Python fallback in ndarray.py).
 *
 * `ArrayBase` is the base type of tnp.ndarray. It holds the two fields of the wrapper (the
 * backend array `_a` and the device `_dev`) and implements the three cheapest operations,
 * which in pure Python cost several times NumPy's own time:
 *
 *   x[key]        key an int, a slice, None, Ellipsis or a tuple of those
 *   x.T
 *   x.reshape(*shape)      (positional arguments only)
 *
 * It also gives tnp.ndarray the two protocols a Python subclass cannot define before Python
 * 3.12: the sequence protocol's item slot (`reversed(x)` and other PySequence_Check users: the
 * mapping slot alone is not a sequence) and the buffer protocol (the NumPy array's own buffer,
 * zero-copy; see base_getbuffer).
 *
 * The fast path applies when `x` is exactly tnp.ndarray (not a subclass), no gradient tape is
 * recording, and the backend result is exactly numpy.ndarray. Anything else calls the Python
 * implementation registered by ndarray.py (`install`), so behaviour is defined in one place.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *a;    /* the backend array */
    PyObject *dev;  /* its tnp device */
} ArrayBase;

static PyTypeObject *nd_type = NULL;      /* tnp.ndarray */
static PyTypeObject *np_ndarray = NULL;   /* numpy.ndarray */
static PyTypeObject *np_generic = NULL;   /* numpy.generic (the scalars) */
static PyObject *host_device = NULL;      /* tnp's device('cpu'): host memory */
static PyObject *slow_getitem = NULL;     /* Python implementations (unbound functions) */
static PyObject *slow_T = NULL;
static PyObject *slow_reshape = NULL;
static int hook_on = 0;                   /* a recording hook is installed */
static PyObject *str_T = NULL;
static PyObject *str_reshape = NULL;
static PyObject *buffer_refusal = NULL;   /* Python: why an array has no buffer, or None */

static int
base_traverse(ArrayBase *self, visitproc visit, void *arg)
{
    Py_VISIT(self->a);
    Py_VISIT(self->dev);
    return 0;
}

static int
base_clear(ArrayBase *self)
{
    Py_CLEAR(self->a);
    Py_CLEAR(self->dev);
    return 0;
}

static void
base_dealloc(ArrayBase *self)
{
    PyObject_GC_UnTrack(self);
    base_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A new tnp.ndarray holding `r` (a reference is stolen) on `dev`. */
static PyObject *
wrap_new(PyObject *r, PyObject *dev)
{
    ArrayBase *o = (ArrayBase *)nd_type->tp_alloc(nd_type, 0);
    if (o == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    o->a = r;
    Py_XINCREF(dev);
    o->dev = dev;
    return (PyObject *)o;
}

static inline int
fast_ok(PyObject *self)
{
    return !hook_on && nd_type != NULL && Py_TYPE(self) == nd_type &&
           ((ArrayBase *)self)->a != NULL && Py_TYPE(((ArrayBase *)self)->a) == np_ndarray;
}

static inline int
simple_index_item(PyObject *k)
{
    return PyLong_CheckExact(k) || PySlice_Check(k) || k == Py_None || k == Py_Ellipsis;
}

static int
simple_key(PyObject *key)
{
    if (simple_index_item(key))
        return 1;
    if (PyTuple_CheckExact(key)) {
        Py_ssize_t n = PyTuple_GET_SIZE(key);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!simple_index_item(PyTuple_GET_ITEM(key, i)))
                return 0;
        return 1;
    }
    return 0;
}

static PyObject *
base_getitem(PyObject *self, PyObject *key)
{
    if (fast_ok(self) && simple_key(key)) {
        PyObject *r = PyObject_GetItem(((ArrayBase *)self)->a, key);
        if (r == NULL)
            return NULL;
        if (Py_TYPE(r) == np_ndarray)
            return wrap_new(r, ((ArrayBase *)self)->dev);
        Py_DECREF(r);   /* a scalar or an object: the Python path wraps it */
    }
    if (slow_getitem == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tnp._speedups: not installed");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(slow_getitem, self, key, NULL);
}

static PyObject *
base_get_T(PyObject *self, void *closure)
{
    if (fast_ok(self)) {
        PyObject *r = PyObject_GetAttr(((ArrayBase *)self)->a, str_T);
        if (r == NULL)
            return NULL;
        if (Py_TYPE(r) == np_ndarray)
            return wrap_new(r, ((ArrayBase *)self)->dev);
        Py_DECREF(r);
    }
    if (slow_T == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tnp._speedups: not installed");
        return NULL;
    }
    return PyObject_CallOneArg(slow_T, self);
}

static PyObject *
base_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && nargs > 0 && fast_ok(self)) {
        /* a.reshape(*args) with the backend array in the slot before the arguments */
        PyObject *stack[9];
        if (nargs <= 8) {
            stack[0] = ((ArrayBase *)self)->a;
            for (Py_ssize_t i = 0; i < nargs; i++)
                stack[i + 1] = args[i];
            PyObject *r = PyObject_VectorcallMethod(str_reshape, stack, nargs + 1, NULL);
            if (r != NULL) {
                if (Py_TYPE(r) == np_ndarray)
                    return wrap_new(r, ((ArrayBase *)self)->dev);
                Py_DECREF(r);
            }
            else {
                /* let the Python path decide (it accepts more spellings and names the op) */
                PyErr_Clear();
            }
        }
    }
    if (slow_reshape == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tnp._speedups: not installed");
        return NULL;
    }
    /* slow_reshape(self, *args, **kwargs) */
    PyObject *stack_small[10];
    PyObject **stack = stack_small;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    Py_ssize_t total = nargs + nkw;
    if (total + 1 > 10) {
        stack = PyMem_Malloc((total + 1) * sizeof(PyObject *));
        if (stack == NULL)
            return PyErr_NoMemory();
    }
    stack[0] = self;
    for (Py_ssize_t i = 0; i < total; i++)
        stack[i + 1] = args[i];
    PyObject *res = PyObject_Vectorcall(slow_reshape, stack, nargs + 1, kwnames);
    if (stack != stack_small)
        PyMem_Free(stack);
    return res;
}

/* x[i] for the sequence protocol (reversed(x), PySequence_GetItem): as x[int(i)] */
static PyObject *
base_sq_item(PyObject *self, Py_ssize_t i)
{
    PyObject *key = PyLong_FromSsize_t(i);
    if (key == NULL)
        return NULL;
    PyObject *r = base_getitem(self, key);
    Py_DECREF(key);
    return r;
}

/* Whether a PEP 3118 format describes a structured or void dtype ("T{...}", "3x"): NumPy reads
 * those back as another dtype (field titles and padding are lost), so they are not exported. */
static int
format_is_v_kind(const char *format)
{
    return format != NULL && (strchr(format, 'T') != NULL || strchr(format, 'x') != NULL);
}

/* The buffer of the backend array itself (zero-copy, writable when it is). numpy.asarray tries a
 * buffer before __array__, so what NumPy would read back differently has none: structured and
 * void arrays (BufferError; ml_dtypes arrays are refused by NumPy itself), and scalars (NumPy would
 * make a read-only 0-d array, where numpy.asarray of a NumPy scalar is writable; and numpy.array of
 * a list of scalars, which goes through here for each one, stays as fast as __array__ makes it).
 * Arrays on other devices have none (GPUs, and the fake cpu:N devices, which stand for memory
 * elsewhere): the Python check (`buffer_refusal`) raises a TypeError naming the device.
 * The refusals NumPy meets on its way to __array__ are raised here, with constant messages,
 * because a Python-level exception would cost more than the conversion. */
#define SCALAR_NO_BUFFER "a tnp scalar exports no buffer; use memoryview(numpy.asarray(s))"
/* (tnp.Scalar itself has no buffer slot, see drop_buffer: this is for its subclasses) */
static int
base_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    PyObject *a = ((ArrayBase *)self)->a;
    if (a == NULL) {
        PyErr_SetString(PyExc_BufferError, "tnp array not initialised");
        return -1;
    }
    if (np_ndarray != NULL && PyObject_TypeCheck(a, np_ndarray) &&
            ((ArrayBase *)self)->dev == host_device) {
        if (PyObject_GetBuffer(a, view, flags | PyBUF_FORMAT) < 0)
            return -1;
        if (format_is_v_kind(view->format)) {
            PyBuffer_Release(view);
            PyErr_SetString(PyExc_BufferError,
                            "a tnp array of a structured or void dtype exports no buffer (NumPy "
                            "would read it back as another dtype); use memoryview(numpy.asarray(x))");
            return -1;
        }
        if (!(flags & PyBUF_FORMAT))
            view->format = NULL;   /* as the consumer asked: unsigned bytes */
        return 0;
    }
    if (np_generic != NULL && PyObject_TypeCheck(a, np_generic)) {
        PyErr_SetString(PyExc_TypeError, SCALAR_NO_BUFFER);
        return -1;
    }
    if (buffer_refusal != NULL) {
        PyObject *why = PyObject_CallOneArg(buffer_refusal, self);
        if (why == NULL)
            return -1;
        Py_DECREF(why);
    }
    return PyObject_GetBuffer(a, view, flags);
}

static PyBufferProcs base_as_buffer = {
    (getbufferproc)base_getbuffer,
    0,      /* the exporter is the backend array: releasing the view releases its buffer */
};

static PySequenceMethods base_as_sequence = {
    0,                          /* sq_length: the Python class's __len__ */
    0, 0,
    (ssizeargfunc)base_sq_item, /* sq_item */
};

static PyMemberDef base_members[] = {
    {"_a", T_OBJECT_EX, offsetof(ArrayBase, a), 0, "the backend array"},
    {"_dev", T_OBJECT_EX, offsetof(ArrayBase, dev), 0, "the device"},
    {NULL}
};

/* tnp.Scalar.__array_interface__: none (numpy.asarray then asks __array__), raised in C for the
 * reason above. Arrays have a Python property of their own, which shadows this one. */
static PyObject *
base_get_no_interface(PyObject *self, void *closure)
{
    PyErr_SetString(PyExc_AttributeError,
                    "__array_interface__: tnp scalars have none; use numpy.asarray(s)");
    return NULL;
}

static PyGetSetDef base_getset[] = {
    {"T", (getter)base_get_T, NULL, "The transposed array (a view).", NULL},
    {"__array_interface__", (getter)base_get_no_interface, NULL,
     "None for scalars (AttributeError); arrays override it.", NULL},
    {NULL}
};

static PyMethodDef base_methods[] = {
    {"reshape", (PyCFunction)(void (*)(void))base_reshape, METH_FASTCALL | METH_KEYWORDS,
     "reshape($self, /, *shape, order='C', copy=None)\n--\n\nA view (or copy) with a new shape; mirrors "
     "numpy.ndarray.reshape."},
    {NULL}
};

static PyMappingMethods base_as_mapping = {
    0,                          /* mp_length: the Python class defines __len__ */
    (binaryfunc)base_getitem,   /* mp_subscript */
    0,                          /* mp_ass_subscript: the Python class defines __setitem__ */
};

static PyTypeObject ArrayBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tnp._core._speedups.ArrayBase",
    .tp_basicsize = sizeof(ArrayBase),
    .tp_itemsize = 0,
    .tp_dealloc = (destructor)base_dealloc,
    .tp_as_mapping = &base_as_mapping,
    .tp_as_sequence = &base_as_sequence,
    .tp_as_buffer = &base_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The C base of tnp.ndarray: its two fields and the fast view operations.",
    .tp_traverse = (traverseproc)base_traverse,
    .tp_clear = (inquiry)base_clear,
    .tp_methods = base_methods,
    .tp_members = base_members,
    .tp_getset = base_getset,
    .tp_new = PyType_GenericNew,
};

static PyObject *
install(PyObject *mod, PyObject *args)
{
    PyObject *nd, *npnd, *gi, *t, *rs, *br = Py_None, *gen = Py_None, *host = Py_None;
    if (!PyArg_ParseTuple(args, "OOOOO|OOO:install", &nd, &npnd, &gi, &t, &rs, &br, &gen, &host))
        return NULL;
    if (!PyType_Check(nd) || !PyType_Check(npnd)) {
        PyErr_SetString(PyExc_TypeError, "install: expected the tnp.ndarray and numpy.ndarray types");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)nd, &ArrayBaseType)) {
        PyErr_SetString(PyExc_TypeError, "install: tnp.ndarray must derive from ArrayBase");
        return NULL;
    }
    Py_INCREF(nd); Py_XSETREF(nd_type, (PyTypeObject *)nd);
    Py_INCREF(npnd); Py_XSETREF(np_ndarray, (PyTypeObject *)npnd);
    Py_INCREF(gi); Py_XSETREF(slow_getitem, gi);
    Py_INCREF(t); Py_XSETREF(slow_T, t);
    Py_INCREF(rs); Py_XSETREF(slow_reshape, rs);
    if (br != Py_None) {
        Py_INCREF(br);
        Py_XSETREF(buffer_refusal, br);
    }
    Py_INCREF(host);
    Py_XSETREF(host_device, host);
    if (gen != Py_None) {
        if (!PyType_Check(gen)) {
            PyErr_SetString(PyExc_TypeError, "install: expected the numpy.generic type");
            return NULL;
        }
        Py_INCREF(gen);
        Py_XSETREF(np_generic, (PyTypeObject *)gen);
    }
    Py_RETURN_NONE;
}

static PyObject *
set_hook(PyObject *mod, PyObject *hook)
{
    hook_on = (hook != Py_None);
    Py_RETURN_NONE;
}

/* drop_buffer(cls): `cls` (tnp.Scalar) exports no buffer at all, so PyObject_CheckBuffer is false
 * and numpy.asarray goes straight on to __array__ instead of failing a buffer request first (it
 * does so once per element of numpy.array([s1, s2, ...])). Its subclasses inherit the base's
 * slot again, which refuses scalars. */
static PyObject *
drop_buffer(PyObject *mod, PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &ArrayBaseType) ||
            !(((PyTypeObject *)cls)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        PyErr_SetString(PyExc_TypeError, "drop_buffer: expected a Python subclass of ArrayBase");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)cls;
    if (t->tp_as_buffer != NULL && t->tp_as_buffer != &base_as_buffer) {
        t->tp_as_buffer->bf_getbuffer = NULL;
        t->tp_as_buffer->bf_releasebuffer = NULL;
    }
    PyType_Modified(t);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"install", install, METH_VARARGS,
     "install(ndarray, numpy_ndarray, getitem, T, reshape[, buffer_check, numpy_generic, host_device]): "
     "register the Python fallbacks, the check that raises for arrays without a buffer, NumPy's "
     "scalar type and the device whose arrays export their buffer"},
    {"drop_buffer", drop_buffer, METH_O,
     "drop_buffer(cls): instances of the subclass cls export no buffer"},
    {"set_hook", set_hook, METH_O,
     "set_hook(hook_or_None): whether a recording hook is installed (fast paths step aside)"},
    {NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_speedups",
    "Optional C accelerator for tnp.ndarray's view operations.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (PyType_Ready(&ArrayBaseType) < 0)
        return NULL;
    str_T = PyUnicode_InternFromString("T");
    str_reshape = PyUnicode_InternFromString("reshape");
    if (str_T == NULL || str_reshape == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&ArrayBaseType);
    if (PyModule_AddObject(m, "ArrayBase", (PyObject *)&ArrayBaseType) < 0) {
        Py_DECREF(&ArrayBaseType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
