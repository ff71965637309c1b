"""Reading the fenced blocks of a page: languages, markers, indented fences in list items."""

from __future__ import annotations

from pathlib import Path

from tests.docs.blocks import blocks

PAGE = """# A page

```sh
curl http://127.0.0.1:8000/readyz
```

<!-- not run: starts the servers -->
```sh
make run
```

1. A step:

   <!-- not run: a deployment recipe -->
   ```sql
   SELECT 1;
   ```

````markdown
```python
print("inside a longer fence")
```
````

```
a diagram
```
"""


def test_blocks_are_read_with_their_language_marker_and_code(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    found = blocks(page)
    assert [(b.language, b.not_run, b.runner) for b in found] == [
        ("sh", None, "sh"),
        ("sh", "starts the servers", None),
        ("sql", "a deployment recipe", None),
        ("markdown", None, None),
        ("", None, None),
    ]
    assert found[0].code == "curl http://127.0.0.1:8000/readyz\n"
    assert found[2].code == "SELECT 1;\n"
    assert found[3].code == '```python\nprint("inside a longer fence")\n```\n'
    assert [b.line for b in found] == [3, 8, 15, 19, 25]
