"""Checks a table of bench/peers: every row has a cell for every engine
named, each a figure, "—" or a bold figure, and the JSON has a median
figure for every row of every engine. Usage: check-peers-table.py TABLE.md
TABLE.json ENGINE..."""

import json
import re
import sys


def main():
    table_path, json_path, *engines = sys.argv[1:]
    lines = [line for line in open(table_path, encoding="utf-8") if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip().strip("|").split("|")]
    if header[1:] != engines:
        sys.exit(f"{table_path}: columns {header[1:]}, not {engines}")
    figure = re.compile(r"^(\*\*)?[0-9][0-9,]*(\.[0-9]+)?(ms)?(\*\*)?$")
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != len(header):
            sys.exit(f"{table_path}: a row of {len(cells)} cells, not {len(header)}: {line!r}")
        for cell in cells[1:]:
            if cell != "—" and not figure.match(cell):
                sys.exit(f"{table_path}: a malformed cell {cell!r} in {line!r}")
    data = json.load(open(json_path, encoding="utf-8"))
    rows = list(data["rows"])
    if len(rows) != len(lines) - 2:
        sys.exit(f"{json_path}: {len(rows)} rows, the table {len(lines) - 2}")
    for engine in engines:
        median = data["engines"][engine]["median"]
        missing = [row for row in rows if row not in median]
        if missing:
            sys.exit(f"{json_path}: {engine} has no figure for {missing}")
        if not any(isinstance(figure, (int, float)) for figure in median.values()):
            sys.exit(f"{json_path}: {engine} has no figure at all")
    print(f"peers table: {len(rows)} rows × {len(engines)} engines, well formed")


if __name__ == "__main__":
    main()
