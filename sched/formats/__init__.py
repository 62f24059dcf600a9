"""The text formats the project reads, one parser each, so every reader refuses the same input
the same way, naming the source (docs/reliability.md):

* ``csv_input``: the CSV rules (a record is one physical line, strict quotes, no NUL, ASCII
  numbers, ids stripped of the white space around them, formula-safe text cells when written);
* ``json_input``: the one JSON parser (a key given twice, NaN, numbers beyond a float, nesting
  and a value count past their limits refused);
* ``machines_input``: a farm's GPUs in every form (a count, a spec ``NxSPEED,...``, a machines
  CSV, a list of speeds);
* ``yaml_input``: the one YAML parser (a key given twice at any depth refused naming both lines,
  nesting past its limit refused naming the file).
"""
