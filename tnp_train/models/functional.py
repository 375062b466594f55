"""``Functional``: a model that is a graph of layer calls, from ``tt.Input``s to outputs.

The graph is the nodes the layers recorded when called on :class:`KerasTensor`s. Running the
model replays the nodes in topological order on arrays; masks travel beside the values.
Several inputs and outputs (lists or dicts), shared layers (one layer, several nodes) and
nested models work as in ``tf.keras``. ``get_config`` writes the graph as JSON; ``from_config``
rebuilds it.
"""
from __future__ import annotations

import contextlib
import contextvars

import tnp
from tnp.extend import is_floating as _is_floating

from ..layers.base import Layer
from ..layers.core import InputLayer
from ..layers.keras_tensor import KerasTensor
from ..layers import serialization as _ser
from ..utils.serialization import get_registered_name
from ..utils.tree import flatten, flatten_up_to, pack_sequence_as
from .model import Model

__all__ = ["Functional"]

# set while a .keras archive is written: every functional config (nested ones too) in this
# module's own node form, which holds any call exactly and maps one to one onto Keras 3's
_OWN_NODE_FORM = contextvars.ContextVar("tnp_train_functional_own_node_form", default=False)


@contextlib.contextmanager
def _own_node_form():
    """Within it, ``get_config`` writes nodes as ``{"args", "kwargs"}`` and ends as they are
    (never TF 2.4's form, which cannot tell ``outputs=[x]`` from ``outputs=x``)."""
    token = _OWN_NODE_FORM.set(True)
    try:
        yield
    finally:
        _OWN_NODE_FORM.reset(token)


def _topo_nodes(outputs):
    """Nodes needed for ``outputs``, inputs first."""
    order, seen = [], set()

    def visit(t):
        node = t.node
        if node is None:
            raise ValueError(f"Output tensors of a Functional model must be the output of a layer "
                             f"(got {t!r})")
        if id(node) in seen:
            return
        seen.add(id(node))
        for inp in node.inputs:
            visit(inp)
        order.append(node)
    for t in outputs:
        visit(t)
    return order


def _foreign_input(nodes, inputs):
    """The first InputLayer node among ``nodes`` whose tensor is not one of ``inputs``."""
    ids = {id(t) for t in inputs}
    return next((n for n in nodes if isinstance(n.layer, InputLayer) and id(n.outputs) not in ids),
                None)


def _keras_layer_order(flat_in, flat_out):
    """The layers in Keras's ``model.layers`` order: by depth from the outputs (deepest, the
    inputs, first), ties in the order a depth-first walk from the outputs first meets them
    (``functional._map_graph_network``). It decides the ``layer-i`` checkpoint keys and what
    ``summary`` and ``get_config`` list, so it follows Keras rather than the run order."""
    post_order, first_seen, done = [], {}, set()

    def visit(t):
        node = t.node
        first_seen.setdefault(id(node.layer), len(first_seen))
        if id(node) in done:
            return
        if not isinstance(node.layer, InputLayer):
            for inp in node.inputs:
                visit(inp)
        done.add(id(node))
        post_order.append(node)
    for t in flat_out:
        visit(t)
    node_depth, layer_depth, by_id = {}, {}, {}
    for node in reversed(post_order):
        depth = max(node_depth.setdefault(id(node), 0), layer_depth.get(id(node.layer), 0))
        layer_depth[id(node.layer)] = depth
        by_id[id(node.layer)] = node.layer
        node_depth[id(node)] = depth
        for inp in ([] if isinstance(node.layer, InputLayer) else node.inputs):
            parent = inp.node
            node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
    for t in flat_in:      # an input the outputs do not use still counts
        layer = t.node.layer
        if id(layer) not in layer_depth:
            layer_depth[id(layer)], first_seen[id(layer)], by_id[id(layer)] = 0, -1, layer
    return sorted(by_id.values(), key=lambda l: (-layer_depth[id(l)], first_seen[id(l)]))


def _one_or_structure(x):
    """TF's normalisation of a functional model's inputs and outputs: a list of one is its
    element; any other structure is a copy of itself (a list, tuple or dict)."""
    if isinstance(x, list) and len(x) == 1:
        return x[0]
    if isinstance(x, (list, tuple)):
        return type(x)(x)
    if isinstance(x, dict):
        return dict(x)
    return x


class Functional(Model):
    """``tt.Model(inputs, outputs, name=None)``."""

    def __init__(self, inputs, outputs, name=None, trainable=True, **kwargs):
        from ..layers.base import unique_name
        Layer.__init__(self, name=name or unique_name("model"), trainable=trainable, **kwargs)
        self._init_trainer()
        self._build_graph(inputs, outputs)

    def _build_graph(self, inputs, outputs):
        flat_in = flatten(inputs)   # a dict's entries by sorted key, as TF's model.inputs
        for t in flat_in:
            if not isinstance(t, KerasTensor) or not isinstance(t.node.layer, InputLayer):
                raise ValueError(f"Input tensors to a Functional model must come from `tt.Input`. "
                                 f"Received: {t!r}")
        flat_out = flatten(outputs)
        for t in flat_out:
            if not isinstance(t, KerasTensor):
                raise ValueError(f"Output tensors of a Functional model must be the output of a "
                                 f"layer, got {type(t).__name__}")
        self._nested_inputs = inputs
        self._nested_outputs = outputs
        self._flat_inputs = flat_in
        self._flat_outputs = flat_out
        nodes = _topo_nodes(flat_out)
        node = _foreign_input(nodes, flat_in)
        if node is not None:
            raise ValueError(f"Graph disconnected: cannot obtain value for tensor "
                             f"{node.outputs!r} at layer \"{node.layer.name}\". The following "
                             f"previous layers were accessed without issue: "
                             f"{[n.layer.name for n in nodes if n is not node][:5]}")
        self._nodes = [n for n in nodes if not isinstance(n.layer, InputLayer)]
        self._ancillary = []     # what add_loss/add_metric computes beside the outputs
        self._layers = layers = _keras_layer_order(flat_in, flat_out)
        for i, layer in enumerate(layers):
            self._track_layer(layer, f"layer-{i}")
        self._mask_layers = {id(l) for l in layers if type(l).compute_mask is not Layer.compute_mask
                             or l.supports_masking}
        self.built = True
        self._output_shape_cache = pack_sequence_as(outputs, [t.shape for t in flat_out])

    def _add_symbolic(self, method, tensor, **kwargs):
        """``add_loss``/``add_metric`` of a symbolic tensor: an ``AddLoss``/``AddMetric`` layer
        on it joins the graph (with the layers that compute it), so every call computes it."""
        from ..layers.core import AddLoss, AddMetric
        layer = AddLoss() if method == "add_loss" else AddMetric(metric_name=kwargs["name"])
        self._attach_ancillary([layer(tensor)])

    def _attach_ancillary(self, tensors):
        wanted = self._flat_outputs + self._ancillary + list(tensors)
        nodes = _topo_nodes(wanted)
        node = _foreign_input(nodes, self._flat_inputs)
        if node is not None:
            raise ValueError(f"{self.name}: the tensor given to add_loss/add_metric is not "
                             f"computed from the model's inputs only: it needs "
                             f"{node.outputs!r} (layer \"{node.layer.name}\"), which is not "
                             f"an input of the model (graph disconnected)")
        self._nodes = [n for n in nodes if not isinstance(n.layer, InputLayer)]
        self._ancillary = wanted[len(self._flat_outputs):]
        known = {id(l) for l in self._layers}
        for node in self._nodes:      # the new layers go last (TF's _insert_layers)
            if id(node.layer) not in known:
                known.add(id(node.layer))
                self._layers.append(node.layer)
                self._track_layer(node.layer, f"layer-{len(self._layers) - 1}")
                if id(node.layer) not in self._mask_layers and (
                        type(node.layer).compute_mask is not Layer.compute_mask
                        or node.layer.supports_masking):
                    self._mask_layers.add(id(node.layer))

    @property
    def layers(self):
        return list(self._layers)

    @property
    def inputs(self):
        return list(self._flat_inputs)

    @property
    def input(self):
        """The model's input tensor(s) in the structure given to the constructor (one tensor
        for a list of one); mirrors tf.keras's ``Functional.input``, which a model answers
        whether or not it has been called as a layer (``Model(vgg.input, ...)``)."""
        return _one_or_structure(self._nested_inputs)

    @property
    def output(self):
        """The model's output tensor(s), as ``input``; mirrors tf.keras's ``Functional.output``."""
        return _one_or_structure(self._nested_outputs)

    @property
    def outputs(self):
        return list(self._flat_outputs)

    @property
    def input_names(self):
        return [t.node.layer.name for t in self._flat_inputs]

    @property
    def output_names(self):
        return self._output_names()

    @property
    def input_shape(self):
        shapes = [t.shape for t in self._flat_inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    def _convert_inputs(self, inputs):
        return inputs   # each layer casts to its own compute dtype

    def _flatten_inputs(self, inputs):
        n = len(self._flat_inputs)
        if isinstance(inputs, dict):
            names = self.input_names
            if isinstance(self._nested_inputs, dict):
                keys = list(self._nested_inputs)
                missing = [k for k in keys if k not in inputs]
                if missing:
                    raise ValueError(f"{self.name}: missing inputs {missing}; got {sorted(inputs)}")
                return flatten_up_to(self._nested_inputs, {k: inputs[k] for k in keys},
                                     check_types=False)
            missing = [k for k in names if k not in inputs]
            if missing:
                raise ValueError(f"{self.name}: missing inputs {missing} (inputs are matched by "
                                 f"the Input names {names}); got {sorted(inputs)}")
            return [inputs[k] for k in names]
        flat = list(inputs) if isinstance(inputs, (list, tuple)) and n > 1 else [inputs]
        if isinstance(inputs, (list, tuple)) and n == 1 and len(inputs) == 1:
            flat = [inputs[0]]
        if len(flat) != n:
            raise ValueError(f"Layer \"{self.name}\" expects {n} input(s), but it received "
                             f"{len(flat)} input tensors.")
        return flat

    def call(self, inputs, training=None, mask=None):
        flat = self._flatten_inputs(inputs)
        values, masks = {}, {}
        for t, x in zip(self._flat_inputs, flat):
            if not isinstance(x, tnp.ndarray):
                x = tnp.asarray(x)
            if x.dtype != t.dtype and _is_floating(x.dtype) and _is_floating(t.dtype):
                x = x.astype(t.dtype)
            # Keras's rank adjustment: one axis of size 1 added or dropped at the end
            if x.ndim == len(t.shape) - 1 and t.shape[-1] == 1:
                x = tnp.expand_dims(x, -1)
            elif x.ndim == len(t.shape) + 1 and x.shape[-1] == 1:
                x = tnp.squeeze(x, -1)
            if x.ndim != len(t.shape) or any(d is not None and d != s for d, s in zip(t.shape, x.shape)):
                raise ValueError(f"Input 0 of layer \"{self.name}\" is incompatible with the layer: "
                                 f"expected shape={t.shape}, found shape={tuple(x.shape)}")
            values[id(t)] = x
        if mask is not None:
            for t, m in zip(self._flat_inputs, flatten(mask)):
                if m is not None:
                    masks[id(t)] = m
        for node in self._nodes:
            layer = node.layer
            leaves = flatten((node.args, node.kwargs))
            concrete = pack_sequence_as((node.args, node.kwargs), [
                values[id(v)] if isinstance(v, KerasTensor) else v for v in leaves])
            args, kwargs = concrete[0], dict(concrete[1])
            first = flatten(node.args[0]) if node.args else []
            in_masks = [masks.get(id(t)) if isinstance(t, KerasTensor) else None for t in first]
            has_mask = any(m is not None for m in in_masks)
            if has_mask and layer.call_takes_mask and "mask" not in kwargs:
                kwargs["mask"] = in_masks[0] if len(in_masks) == 1 else in_masks
            if "training" not in kwargs or kwargs["training"] is None:
                kwargs["training"] = training
            out = layer(*args, **kwargs)
            out_leaves = flatten(out)
            for t, o in zip(flatten(node.outputs), out_leaves):
                values[id(t)] = o
            if id(layer) in self._mask_layers and (has_mask or
                                                   type(layer).compute_mask is not Layer.compute_mask):
                m = layer.compute_mask(args[0], in_masks[0] if len(in_masks) == 1 else
                                       (in_masks if has_mask else None))
                if m is not None:
                    for t in flatten(node.outputs):
                        masks[id(t)] = m if not isinstance(m, (list, tuple)) else m[0]
        outs = [values[id(t)] for t in self._flat_outputs]
        return pack_sequence_as(self._nested_outputs, outs)

    def compute_mask(self, inputs, mask=None):
        return None

    # ------------------------------------------------------------------ config
    def get_config(self):
        mine = {id(n) for n in self._nodes}
        node_index = {}   # a node's position among this model's nodes of its layer
        for layer in self._layers:
            k = 0
            for n in layer.inbound_nodes:
                if id(n) in mine or isinstance(layer, InputLayer):
                    node_index[id(n)] = k
                    k += 1

        def ref(t):
            return {"__keras_tensor__": [t.node.layer.name, node_index[id(t.node)], t.tensor_index]}

        def enc(x):
            if isinstance(x, KerasTensor):
                return ref(x)
            if isinstance(x, (list, tuple)):
                return [enc(e) for e in x]
            if isinstance(x, dict):
                return {k: enc(v) for k, v in x.items()}
            if x is None or isinstance(x, (bool, int, float, str)):
                return x
            raise ValueError(f"{self.name}.get_config: cannot serialize the call argument {x!r}")

        configs = {id(layer): {"class_name": get_registered_name(type(layer)),
                               "config": layer.get_config()} for layer in self._layers}
        # TF counts a nested model's calls from 1 (see _numbers_calls_from_one)
        from_one = {layer.name for layer in self._layers
                    if _numbers_calls_from_one(configs[id(layer)])}

        def tf_ref(t):
            name = t.node.layer.name
            return [name, node_index[id(t.node)] + (name in from_one), t.tensor_index]

        def tf_value(x):      # TF 2.4's form of a kwargs value: tensors as [layer, node, tensor]
            if isinstance(x, KerasTensor):
                return tf_ref(x)
            if isinstance(x, (list, tuple)):
                return [tf_value(e) for e in x]
            if isinstance(x, dict):
                return {k: tf_value(v) for k, v in x.items()}
            return enc(x)

        def tf_node(layer, node):
            """TF 2.4's ``[[layer, node, tensor, kwargs], ...]`` (one entry per tensor of the
            first argument; other positional arguments become keywords, as TF's Node does),
            or None when the call has no such form."""
            args = list(node.args)
            if not args:
                return None
            first, rest = args[0], args[1:]
            kwargs = dict(node.kwargs)
            if rest:
                names = _call_arg_names(layer)
                if names is None or len(names) < len(rest) or \
                        any(n in kwargs for n in names[:len(rest)]):
                    return None
                kwargs.update(zip(names, rest))
            kw = tf_value(kwargs)
            tensors = [first] if isinstance(first, KerasTensor) else first
            if not isinstance(tensors, (list, tuple)) or not tensors or \
                    not all(isinstance(t, KerasTensor) for t in tensors):
                return None
            if isinstance(first, (list, tuple)) and len(first) == 1:
                return None       # TF's form cannot tell [x] from x
            return [tf_ref(t) + [kw] for t in tensors]

        layers, tf_form, own = [], not _OWN_NODE_FORM.get(), []
        for layer in self._layers:
            nodes = [n for n in layer.inbound_nodes if id(n) in mine]
            inbound = [{"args": enc(list(n.args)), "kwargs": enc(n.kwargs)} for n in nodes]
            own.append(inbound)
            if tf_form and not isinstance(layer, InputLayer):
                converted = [tf_node(layer, n) for n in nodes]
                if any(c is None for c in converted):
                    tf_form = False
                else:
                    inbound = converted
            layers.append({**configs[id(layer)], "name": layer.name,
                           "inbound_nodes": inbound})
        if tf_form:
            # TF's form only where it reads back as the same calls (a value TF's form would
            # take for a tensor reference, say, must not become one); positional arguments
            # after the first come back by name, as TF 2.4 writes them
            back = _from_keras2_format({"layers": layers, "input_layers": [],
                                        "output_layers": []})["layers"]
            tf_form = all(spec["inbound_nodes"] == [_by_name(layer, n) for n in mine_]
                          for spec, mine_, layer in zip(back, own, self._layers)
                          if not isinstance(layer, InputLayer))
        if not tf_form:
            # a call TF 2.4's format cannot hold (a tensor among other values in the first
            # argument, a one-element list): the whole graph in our own form, which
            # from_config reads too
            for spec, inbound in zip(layers, own):
                spec["inbound_nodes"] = inbound
            return {"name": self.name, "trainable": self.trainable, "layers": layers,
                    "input_layers": enc(self._nested_inputs),
                    "output_layers": enc(self._nested_outputs)}

        def ends(x):          # TF 2.4: a single input or output as a one-element list
            out = tf_value(x)
            return [out] if isinstance(x, KerasTensor) else out
        return {"name": self.name, "trainable": self.trainable, "layers": layers,
                "input_layers": ends(self._nested_inputs),
                "output_layers": ends(self._nested_outputs)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = _from_keras2_format(config)
        created = {}
        for spec in config["layers"]:
            layer = _ser.deserialize({"class_name": spec["class_name"], "config": spec["config"]},
                                     custom_objects)
            created[spec["name"]] = layer
        node_outputs = {}   # (layer name, node index) -> outputs
        for name, layer in created.items():
            if isinstance(layer, InputLayer):
                node_outputs[(name, 0)] = layer.output

        def resolvable(x):
            if isinstance(x, dict) and "__keras_tensor__" in x:
                n, i, _ = x["__keras_tensor__"]
                return (n, i) in node_outputs
            if isinstance(x, list):
                return all(resolvable(e) for e in x)
            if isinstance(x, dict):
                return all(resolvable(v) for v in x.values())
            return True

        def dec(x):
            if isinstance(x, dict) and "__keras_tensor__" in x:
                n, i, j = x["__keras_tensor__"]
                return flatten(node_outputs[(n, i)])[j]
            if isinstance(x, list):
                return [dec(e) for e in x]
            if isinstance(x, dict):
                return {k: dec(v) for k, v in x.items()}
            return x

        pending = [(spec["name"], k, node) for spec in config["layers"]
                   for k, node in enumerate(spec["inbound_nodes"])]
        counters = {}
        while pending:
            progressed = False
            rest = []
            for name, k, node in pending:
                if counters.get(name, 0) == k and resolvable(node["args"]) and \
                        resolvable(node["kwargs"]):
                    layer = created[name]
                    out = layer(*dec(node["args"]), **dec(node["kwargs"]))
                    idx = counters.get(name, 0)
                    counters[name] = idx + 1
                    node_outputs[(name, idx)] = out
                    progressed = True
                else:
                    rest.append((name, k, node))
            if not progressed:
                raise ValueError(f"Functional.from_config: cannot resolve the inputs of layers "
                                 f"{[n for n, _, _ in rest]}")
            pending = rest
        # by keyword, as TF: a subclass's own __init__(inputs, outputs, ...) receives them
        extra = {} if config.get("trainable", True) else {"trainable": False}
        model = cls(inputs=dec(config["input_layers"]), outputs=dec(config["output_layers"]),
                    name=config.get("name"), **extra)
        # add_loss/add_metric terms are not on the way to the outputs: put them back (TF's
        # connect_ancillary_layers)
        from ..layers.core import AddLoss, AddMetric
        ancillary = [node_outputs[(name, k)] for name, layer in created.items()
                     if isinstance(layer, (AddLoss, AddMetric))
                     for k in range(counters.get(name, 0))]
        if ancillary:
            model._attach_ancillary(ancillary)
        return model


def _call_arg_names(layer):
    """The names of ``layer.call``'s parameters after the first (None if it takes ``*args``)."""
    import inspect
    try:
        params = list(inspect.signature(layer.call).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return [p.name for p in params[1:] if p.kind in (p.POSITIONAL_ONLY,
                                                    p.POSITIONAL_OR_KEYWORD)]


def _by_name(layer, node):
    """An own-form node with its positional arguments after the first passed by name."""
    args = node["args"]
    if len(args) < 2:
        return node
    names = _call_arg_names(layer) or []
    return {"args": args[:1], "kwargs": {**node["kwargs"], **dict(zip(names, args[1:]))}}


def _numbers_calls_from_one(spec):
    """Whether TF's configs number this layer's calls from 1: a nested model built on an
    ``InputLayer`` (a functional one; a Sequential whose first layer is one, or gets one from
    its ``batch_input_shape``) has a node of its own linking its inputs to its outputs, which
    TF counts and leaves out of configs (its ``_should_skip_first_node``); ours has none."""
    cfg = spec.get("config") if isinstance(spec, dict) else None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("layers"), list):
        return False
    if "input_layers" in cfg:
        return True
    first = cfg["layers"][0] if cfg["layers"] else None
    return spec.get("class_name") == "Sequential" and isinstance(first, dict) and (
        first.get("class_name") == "InputLayer" or
        "batch_input_shape" in (first.get("config") or {}))


def _from_keras2_format(config):
    """A functional config written by TF 2.4 / Keras 2 (``inbound_nodes`` as lists of
    ``[layer, node, tensor, kwargs]``, inputs and outputs as ``[layer, node, tensor]``) in this
    module's format (nodes as ``{"args", "kwargs"}``, tensors as ``{"__keras_tensor__"}``);
    a config already in it is returned as is."""
    layers = config.get("layers", [])
    if not any(isinstance(n, list) for spec in layers for n in spec.get("inbound_nodes", [])):
        return config
    names = {spec["name"] for spec in layers}
    from_one = {spec["name"] for spec in layers if _numbers_calls_from_one(spec)}

    def is_ref(x):
        return isinstance(x, list) and len(x) in (3, 4) and isinstance(x[0], str) and \
            x[0] in names and isinstance(x[1], int) and isinstance(x[2], int)

    def tensors(x):
        if is_ref(x):
            return {"__keras_tensor__": [x[0], x[1] - (x[0] in from_one), x[2]]}
        if isinstance(x, list):
            return [tensors(e) for e in x]
        if isinstance(x, dict):
            return {k: tensors(v) for k, v in x.items()}
        return x

    def node(entries):
        args = [tensors(e[:3]) for e in entries]
        kwargs = entries[0][3] if entries and len(entries[0]) > 3 else {}
        return {"args": [args[0] if len(args) == 1 else args], "kwargs": tensors(kwargs)}

    def ends(x):          # a single input or output is given as a one-element list
        out = tensors(x)
        return out[0] if isinstance(out, list) and len(out) == 1 else out

    new_layers = [{**spec, "inbound_nodes": [node(n) if isinstance(n, list) else n
                                             for n in spec.get("inbound_nodes", [])]}
                  for spec in layers]
    return {**config, "layers": new_layers, "input_layers": ends(config["input_layers"]),
            "output_layers": ends(config["output_layers"])}
