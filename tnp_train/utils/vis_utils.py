"""``model_to_dot`` and ``plot_model`` (``tf.keras.utils`` of TF 2.4), drawn with pydot and
graphviz: optional dependencies (``pip install pydot`` and graphviz's ``dot`` program);
without them these functions raise ImportError saying so."""
from __future__ import annotations

import os

__all__ = ["model_to_dot", "plot_model"]

_MISSING = ("Failed to import pydot. You must `pip install pydot` and install graphviz "
            "(https://graphviz.gitlab.io/download/), for `model_to_dot` and `plot_model` to "
            "work.")


def _pydot():
    try:
        import pydot
    except ImportError:
        raise ImportError(_MISSING) from None
    return pydot


def _is_a(model, *class_names):
    # by class name, as the TensorBoard callback tells a graph model: the models sit far above
    # this module
    return any(c.__name__ in class_names for c in type(model).__mro__)


def _is_graph_model(model):
    return _is_a(model, "Functional", "Sequential") and bool(model.layers) and \
        any(layer.inbound_nodes for layer in model.layers)


def _source_layer(t):
    node = getattr(t, "node", None)
    return None if node is None else node.layer


def _graph_layers(model):
    """The model's layers, preceded by the input layers that feed them (a Sequential does not
    list its InputLayer; Keras draws it)."""
    layers = list(model.layers)
    seen = {id(layer) for layer in layers}
    inputs = []
    for layer in layers:
        for node in layer.inbound_nodes:
            for t in node.inputs:
                src = _source_layer(t)
                if src is not None and id(src) not in seen and \
                        type(src).__name__ == "InputLayer":
                    inputs.append(src)
                    seen.add(id(src))
    return inputs + layers


def _shape_text(shape):
    return str(shape).replace(str(None), "None")


def _shapes(layer):
    """Keras's ``input_shape``/``output_shape`` texts: an InputLayer's input is a list of one
    shape, as TF 2.4 prints it."""
    if not layer.inbound_nodes:
        return "?", "?"
    node = layer.inbound_nodes[0]
    outs = node.outputs if isinstance(node.outputs, (list, tuple)) else [node.outputs]
    out_shapes = [tuple(o.shape) for o in outs]
    output = _shape_text(out_shapes[0] if len(out_shapes) == 1 else out_shapes)
    if type(layer).__name__ == "InputLayer":
        return _shape_text(out_shapes), output
    in_shapes = [tuple(t.shape) for t in node.inputs]
    return _shape_text(in_shapes[0] if len(in_shapes) == 1 else in_shapes), output


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True,
                 rankdir="TB", expand_nested=False, dpi=96, subgraph=False):
    """A ``pydot.Dot`` graph of the model, one ``record`` node per layer labelled as Keras
    labels it (``"dense: Dense"``, then dtype and input/output shapes when asked), an edge per
    connection; mirrors ``tf.keras.utils.model_to_dot``."""
    pydot = _pydot()
    if subgraph:
        dot = pydot.Cluster(style="dashed", graph_name=model.name)
        dot.set("label", model.name)
        dot.set("labeljust", "l")
    else:
        dot = pydot.Dot()
        dot.set("rankdir", rankdir)
        dot.set("concentrate", True)
        dot.set("dpi", dpi)
        dot.set_node_defaults(shape="record")
    if not _is_graph_model(model):
        dot.add_node(pydot.Node(str(id(model)), label=model.name))
        return dot
    layers = _graph_layers(model)
    first, last = {}, {}
    for layer in layers:
        nested = expand_nested and _is_a(layer, "Functional")
        if nested:
            sub = model_to_dot(layer, show_shapes, show_dtype, show_layer_names, rankdir,
                               expand_nested, subgraph=True)
            nodes = sub.get_nodes()
            first[id(layer)], last[id(layer)] = nodes[0].get_name(), nodes[-1].get_name()
            dot.add_subgraph(sub)
            continue
        name, cls = layer.name, type(layer).__name__
        inner = getattr(layer, "layer", None)
        if inner is not None and hasattr(inner, "name"):          # a wrapper
            name, cls = f"{name}({inner.name})", f"{cls}({type(inner).__name__})"
        label = f"{name}: {cls}" if show_layer_names else cls
        if show_dtype:
            dt = getattr(layer, "dtype", None)
            label = f"{label}|{'?' if dt is None else dt}"
        if show_shapes:
            inputs, outputs = _shapes(layer)
            label = "%s\n|{input:|output:}|{{%s}|{%s}}" % (label, inputs, outputs)
        dot.add_node(pydot.Node(str(id(layer)), label=label))
    ids = {id(layer) for layer in layers}
    for layer in layers:
        for node in layer.inbound_nodes:
            sources = [_source_layer(t) for t in node.inputs]
            if not sources or not all(s is not None and id(s) in ids for s in sources):
                continue            # a call outside this model
            dst = first.get(id(layer), str(id(layer)))
            for src in sources:
                src_name = last.get(id(src), str(id(src)))
                if not dot.get_edge(src_name, dst):
                    dot.add_edge(pydot.Edge(src_name, dst))
    return dot


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=True, rankdir="TB", expand_nested=False, dpi=96):
    """Draw the model to ``to_file`` (the format from its extension, png by default) with
    graphviz; mirrors ``tf.keras.utils.plot_model``. Returns an IPython image when IPython is
    there (as Keras does in a notebook), else None."""
    dot = model_to_dot(model, show_shapes, show_dtype, show_layer_names, rankdir,
                       expand_nested, dpi)
    ext = os.path.splitext(os.fspath(to_file))[1]
    fmt = ext[1:] if ext else "png"
    try:
        dot.write(os.fspath(to_file), format=fmt)
    except (OSError, FileNotFoundError) as e:
        raise ImportError(f"plot_model: pydot could not run graphviz's `dot` program to write "
                          f"{to_file} ({e}); install graphviz "
                          f"(https://graphviz.gitlab.io/download/)") from e
    if fmt != "pdf":
        try:
            from IPython import display
        except ImportError:
            return None
        return display.Image(filename=os.fspath(to_file))
    return None
