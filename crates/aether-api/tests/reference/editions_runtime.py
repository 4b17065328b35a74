"""Crosses messages through Python protobuf, a real editions runtime.

Loads the edition-2024 descriptor set as written (generated/descriptors/aether.binpb),
not the proto3 lowering the Rust side is generated from, so any difference in
field presence or encoding between the two shows up as different bytes.

Input, one JSON object a line: {"type": "VirtualHostSpec", "binary": "<base64>"}
or {"type": ..., "json": "<proto3 JSON>"}. Output, a line each:
{"binary": "<base64 of Python's deterministic serialization>"} or {"error": "..."}.
"""

import base64
import json
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory


API_FILE = "aether/config/v1/virtual_host.proto"


def load(descriptor_set_path):
    fds = descriptor_pb2.FileDescriptorSet()
    with open(descriptor_set_path, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    edition = None
    for file in fds.file:
        pool.Add(file)
        if file.name == API_FILE:
            edition = f"{file.syntax}:{descriptor_pb2.Edition.Name(file.edition)}"
    return pool, edition


def main():
    pool, edition = load(sys.argv[1])
    # The first line says what was loaded, so the test can insist on the
    # editions original rather than a lowered copy.
    sys.stdout.write(json.dumps({"loaded": edition}) + "\n")
    sys.stdout.flush()
    classes = {}
    for line in sys.stdin:
        request = json.loads(line)
        name = "aether.config.v1." + request["type"]
        if name not in classes:
            classes[name] = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
        message = classes[name]()
        try:
            if "binary" in request:
                message.ParseFromString(base64.b64decode(request["binary"]))
            else:
                json_format.Parse(request["json"], message)
            out = message.SerializeToString(deterministic=True)
            answer = {"binary": base64.b64encode(out).decode()}
        except Exception as error:  # the Rust side reports it with the input
            answer = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
