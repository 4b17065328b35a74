#!/usr/bin/env python3
"""Judges messages with the reference protovalidate (Python, 2.1.0).

Reads one request per line on stdin:

    <message full name> <base64 of the binary message>

e.g. `aether.config.v1.VirtualHostSpec CgthcGkuZXhhbXBsZS5jb20=`, and
answers each with one JSON line on stdout, in order:

    {"violations": [{"field": "routes[2].match.prefix", "rule_id": "...", "message": "..."}]}

(an empty list means valid), or {"error": "..."} if the line could not be
parsed or validated. `field` is protovalidate's field path as written in its
own error text: proto field names, `[i]` for list indexes, `[key]` for map keys.

The message types come from the edition-2024 descriptor set with imports
(`generated/descriptors/aether.binpb`, or --descriptors), loaded into a
google.protobuf descriptor pool. Batch in, batch out: start it once and feed
it as many lines as you like.
"""

import argparse
import base64
import json
import pathlib
import sys
import time

import protovalidate
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

DEFAULT_DESCRIPTORS = pathlib.Path(__file__).resolve().parents[4] / "generated" / "descriptors" / "aether.binpb"


def load_pool(path):
    files = descriptor_pb2.FileDescriptorSet.FromString(pathlib.Path(path).read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:  # imports come first in the set
        pool.Add(file)
    return pool


def field_path(violation):
    parts = []
    # A message-level rule's violation has no field: its path is the message's.
    if violation.field is None:
        return ""
    for element in violation.field.elements:
        text = element.field_name
        subscript = element.subscript
        if subscript is not None:
            key = subscript.value
            text += "[%s]" % (json.dumps(key, ensure_ascii=False) if isinstance(key, str) else str(key).lower() if isinstance(key, bool) else key)
        parts.append(text)
    return ".".join(parts)


def judge(pool, classes, validator, line):
    name, _, payload = line.strip().partition(" ")
    if name not in classes:
        classes[name] = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
    message = classes[name].FromString(base64.b64decode(payload, validate=True))
    violations = validator.collect_violations(message)
    return {
        "violations": [
            {"field": field_path(v.proto), "rule_id": v.proto.rule_id, "message": v.proto.message}
            for v in violations
        ]
    }


def bench(pool, classes, validator, line, seconds):
    """Validations per second of one message, validated over and over for `seconds`."""
    name, _, payload = line.strip().partition(" ")
    if name not in classes:
        classes[name] = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
    message = classes[name].FromString(base64.b64decode(payload, validate=True))
    violations = len(validator.collect_violations(message))
    count, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(100):
            validator.collect_violations(message)
        count += 100
        now = time.perf_counter()
        if now >= deadline:
            break
    return {"per_second": count / (now - start), "violations": violations}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--descriptors", default=DEFAULT_DESCRIPTORS, help="FileDescriptorSet with imports")
    parser.add_argument("--bench", type=float, metavar="SECONDS",
                        help="instead of judging, answer each line with its validations per second")
    args = parser.parse_args()
    pool = load_pool(args.descriptors)
    validator = protovalidate.Validator()
    classes = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            if args.bench:
                answer = bench(pool, classes, validator, line, args.bench)
            else:
                answer = judge(pool, classes, validator, line)
        except Exception as err:  # one bad line must not hide the others' answers
            answer = {"error": "%s: %s" % (type(err).__name__, err)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
