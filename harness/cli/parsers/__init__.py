"""The parsers of the command groups, one module per area (harness/cli/app.py puts them together).

Every run of `harness` builds the whole parser: these modules import only what parsing needs, and name each
command's handler as "module:function", imported when that command runs."""
