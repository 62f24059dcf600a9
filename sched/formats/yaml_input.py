"""The one YAML parser of every YAML document the project reads (config files, the schema).

``parse(text, source, error)`` is ``yaml.safe_load`` (no code is ever run) with the checks a
careful reader owes its input, each refused with ``error`` naming ``source`` in one line:

* a key given twice in one mapping, at any depth (``yaml.safe_load`` silently keeps the
  last one, so a section written twice loses the first): the message names the key and the
  lines of both; a merge key's (``<<: *base``) values may still be overridden, as YAML says;
* nesting deeper than ``MAX_YAML_DEPTH`` levels (the parser's recursion would otherwise
  end in a RecursionError that names no file);
* more than ``MAX_YAML_NODES`` values once its aliases are expanded (a few hundred bytes of
  nested anchors expand to billions of values when anything walks them).
"""

import yaml

from sched.errors import shorten
from sched.limits import MAX_YAML_DEPTH, MAX_YAML_NODES


class _Refused(Exception):
    """Raised from the loader's hooks; carries the message."""


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` refusing duplicate keys and deep nesting (see the module)."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise _Refused(f"line {mark.line + 1}: nested more than {MAX_YAML_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # <<: its keys may be overridden by the mapping's own
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: SafeLoader refuses it with its own message
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    where = f"at lines {first} and {line}"
                    raise _Refused(f"key {shorten(key)} appears twice in one mapping, {where}")
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def count_values(data, limit):
    """The number of values in ``data``, aliases expanded, counting stops past ``limit``."""
    count, stack = 0, [data]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def parse(text, source, error):
    """The YAML document ``text`` (one document), checked as the module says, or ``error``."""
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506  (a SafeLoader: no code is run)
    except _Refused as exc:
        raise error(f"{source}: {exc}") from None
    except yaml.YAMLError as exc:
        raise error(f"{source}: not valid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:  # a safety net: the depth limit stops the parser long before
        raise error(f"{source}: nested too deeply (more than {MAX_YAML_DEPTH} levels)") from None
    if count_values(data, MAX_YAML_NODES) > MAX_YAML_NODES:
        raise error(
            f"{source}: more than {MAX_YAML_NODES} values once its aliases are expanded "
            "(nested YAML anchors?)"
        )
    return data
