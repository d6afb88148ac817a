"""Tooltips for what Gradio gives no tooltip of its own: a table's headers and a box, by a small page script.

Gradio's Dataframe takes no title per header, so the page sets each ``th``'s title from its text (and a box's
title from its selector) whenever the page changes, at most once a frame.
"""

from __future__ import annotations

import json
from collections.abc import Mapping


def tooltip_script(headers: Mapping[str, Mapping[str, str]], boxes: Mapping[str, str]) -> str:
    """A <script> that titles the headers of each table (``{selector: {header text: tip}}``) and each box (``{selector: tip}``)."""
    return f"""<script>
(() => {{
  const HEADERS = {json.dumps(headers)}, BOXES = {json.dumps(boxes)};
  let queued = false;
  const apply = () => {{
    queued = false;
    for (const [sel, tips] of Object.entries(HEADERS)) {{
      for (const th of document.querySelectorAll(sel + ' thead th')) {{
        const tip = tips[th.textContent.replace(/[\\s\u22ee]+/g, ' ').trim()];  // less Gradio's column-menu button
        if (tip && th.title !== tip) th.title = tip;
      }}
    }}
    for (const [sel, tip] of Object.entries(BOXES)) {{
      const el = document.querySelector(sel);
      if (el && el.title !== tip) el.title = tip;
    }}
  }};
  new MutationObserver(() => {{ if (!queued) {{ queued = true; requestAnimationFrame(apply); }} }})
    .observe(document, {{ childList: true, subtree: true }});
}})();
</script>"""
