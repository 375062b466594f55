"""``tnp_train.io.example_pb2``: the ``tf.train.Example`` protocol buffers (``Example``, ``Features``, ``Feature``,
``BytesList``, ``FloatList``, ``Int64List``, ``SequenceExample``, ``FeatureList``,
``FeatureLists``), made with the ``protobuf`` package from the schema below.

The schema is TF's wire format (package ``tensorflow``, the same message and field names and
numbers, proto3), written here as a table: a file TF writes parses here and the reverse. The
descriptors live in a pool of their own, so TensorFlow's own ``example.proto`` may be loaded in
the same process.
"""
from __future__ import annotations

__all__ = ["MESSAGES", "message_classes", "Example", "Features", "Feature", "BytesList",
           "FloatList", "Int64List", "SequenceExample", "FeatureList", "FeatureLists"]

# message -> [(field, number, label, type, message type or None, oneof or None)]; a map field
# is ("feature", 1, "map", "string", "Feature", None)
_SCHEMA = {
    "BytesList": [("value", 1, "repeated", "bytes", None, None)],
    "FloatList": [("value", 1, "repeated", "float", None, None)],
    "Int64List": [("value", 1, "repeated", "int64", None, None)],
    "Feature": [("bytes_list", 1, "optional", "message", "BytesList", "kind"),
                ("float_list", 2, "optional", "message", "FloatList", "kind"),
                ("int64_list", 3, "optional", "message", "Int64List", "kind")],
    "Features": [("feature", 1, "map", "string", "Feature", None)],
    "FeatureList": [("feature", 1, "repeated", "message", "Feature", None)],
    "FeatureLists": [("feature_list", 1, "map", "string", "FeatureList", None)],
    "Example": [("features", 1, "optional", "message", "Features", None)],
    "SequenceExample": [("context", 1, "optional", "message", "Features", None),
                        ("feature_lists", 2, "optional", "message", "FeatureLists", None)],
}
MESSAGES = tuple(_SCHEMA)
_PACKAGE = "tensorflow"
_classes = None


def _protobuf():
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("tf.train.Example needs the 'protobuf' package: pip install "
                          "tnp[tfrecord] (or pip install protobuf)") from None
    return descriptor_pb2, descriptor_pool, message_factory


def _file_descriptor(descriptor_pb2):
    F = descriptor_pb2.FieldDescriptorProto
    types = {"bytes": F.TYPE_BYTES, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64,
             "string": F.TYPE_STRING, "message": F.TYPE_MESSAGE}
    labels = {"optional": F.LABEL_OPTIONAL, "repeated": F.LABEL_REPEATED}
    fd = descriptor_pb2.FileDescriptorProto(name="tnp_train/io/example.proto",
                                            package=_PACKAGE, syntax="proto3")

    def add(msg, name, number, label, kind, type_name=None, oneof_index=None):
        f = msg.field.add(name=name, number=number, label=labels[label], type=types[kind])
        if type_name:
            f.type_name = type_name
        if oneof_index is not None:
            f.oneof_index = oneof_index
        # TF's json_name, so MessageToJson writes the same keys
        f.json_name = name.split("_")[0] + "".join(p.title() for p in name.split("_")[1:])

    for name, fields in _SCHEMA.items():
        msg = fd.message_type.add(name=name)
        oneofs = []
        for field, number, label, kind, type_name, oneof in fields:
            full = f".{_PACKAGE}.{type_name}" if type_name else None
            if label == "map":
                entry_name = "".join(p.title() for p in field.split("_")) + "Entry"
                entry = msg.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                add(entry, "key", 1, "optional", kind)
                add(entry, "value", 2, "optional", "message", full)
                add(msg, field, number, "repeated", "message",
                    f".{_PACKAGE}.{name}.{entry_name}")
                continue
            index = None
            if oneof is not None:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    msg.oneof_decl.add(name=oneof)
                index = oneofs.index(oneof)
            add(msg, field, number, label, kind, full, index)
    return fd


def message_classes():
    """``{name: message class}`` for the messages of ``MESSAGES`` (made once)."""
    global _classes
    if _classes is None:
        descriptor_pb2, descriptor_pool, message_factory = _protobuf()
        pool = descriptor_pool.DescriptorPool()
        pool.Add(_file_descriptor(descriptor_pb2))
        _classes = {name: message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"{_PACKAGE}.{name}")) for name in MESSAGES}
        for name, cls in _classes.items():
            cls.__module__ = "tnp_train.train"
    return _classes


def __getattr__(name):
    # the classes are made when first asked for, so importing tt.io needs no protobuf
    if name in _SCHEMA:
        return message_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
