"""Calls every operation of a cardex server through a client generated from its OpenAPI
document with openapi-python-client, with the document's own examples as arguments.

Usage: generated_client_check.py PACKAGE_PARENT PACKAGE DOCUMENT BASE_URL [KEY TEAM]

PACKAGE (in PACKAGE_PARENT) is the generated client, DOCUMENT the JSON it was generated
from. Every operation must answer 200 and its answer must parse into the documented type;
the script prints one line per operation and exits non-zero on the first that does not.
"""

import importlib
import inspect
import json
import pkgutil
import re
import sys


def snake(name):
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).replace("-", "_").lower()


def flat(name):
    """A name without case or underscores (the generator writes `v2SearchCards` as
    `v_2_search_cards`)."""
    return name.replace("_", "").lower()


def main():
    parent, package, document, base_url = sys.argv[1:5]
    credentials = sys.argv[5:7]
    sys.path.insert(0, parent)
    client_module = importlib.import_module(package)
    headers = {}
    if credentials:
        headers = {"X-Api-Key": credentials[0], "X-Team-ID": credentials[1]}
    client = client_module.Client(base_url=base_url, headers=headers, raise_on_unexpected_status=True)

    # Every generated operation module, by name (the snake_case operationId).
    api = importlib.import_module(package + ".api")
    modules = {}
    for info in pkgutil.walk_packages(api.__path__, api.__name__ + "."):
        module = importlib.import_module(info.name)
        if hasattr(module, "sync_detailed"):
            modules[flat(info.name.rsplit(".", 1)[1])] = module

    with open(document, encoding="utf-8") as f:
        doc = json.load(f)
    components = doc.get("components", {}).get("parameters", {})
    called = 0
    for path, item in sorted(doc["paths"].items()):
        operation = item["get"]
        name = snake(operation["operationId"])
        module = modules.get(flat(name))
        if module is None:
            sys.exit(f"{path}: no generated function for operation {operation['operationId']} ({name})")
        signature = inspect.signature(module.sync_detailed)
        arguments = {}
        for parameter in operation.get("parameters", []):
            if "$ref" in parameter:
                parameter = components[parameter["$ref"].rsplit("/", 1)[1]]
            if "example" not in parameter:
                if parameter.get("required"):
                    sys.exit(f"{path}: required parameter {parameter['name']} has no example")
                continue
            argument = snake(parameter["name"])
            if argument not in signature.parameters:
                sys.exit(f"{path}: the generated {name} has no argument {argument}")
            arguments[argument] = parameter["example"]
        response = module.sync_detailed(client=client, **arguments)
        if response.status_code != 200:
            sys.exit(f"{path} {arguments}: status {response.status_code}: {response.content[:300]!r}")
        parsed = response.parsed
        if parsed is None or type(parsed).__name__ == "Error":
            sys.exit(f"{path} {arguments}: the answer did not parse as documented: {response.content[:300]!r}")
        # The examples come from the served data: a search finds what they name.
        if getattr(parsed, "total_count", 1) < 1 or getattr(parsed, "total_count", 1) is None:
            sys.exit(f"{path} {arguments}: the examples found nothing")
        print(f"ok {operation['operationId']} {path} {sorted(arguments)} -> {type(parsed).__name__}")
        called += 1
    print(f"{called} operations called")


if __name__ == "__main__":
    main()
