"""Reading result folders: `load` turns a folder's summary.json and worker logs into
`RunData` and the numbers every table needs; `columns` formats those numbers into cells and
Markdown tables. Both the report (emulation/report/) and the papers' sections
(emulation/papers/) build on this package; it imports neither of them."""
