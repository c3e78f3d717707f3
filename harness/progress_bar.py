"""The progress bar on a terminal (rich): label, bar, done/total, then rate, running accuracy and ETA, on one
line of 80 columns. On a narrower terminal only the label gives way (cut with an ellipsis); the figures never do."""

from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task
from rich.table import Column
from rich.text import Text

# figures(per_second or None, hits, judged, seconds_left or None): the texts after done/total (harness/console.py
# words them, for the plain lines too)
Figures = Callable[[float | None, int, int, float | None], list[str]]

BAR_WIDTH = 12


def _fixed() -> Column:
    return Column(no_wrap=True)


def figures_text(task: Task, figures: Figures) -> str:
    """`25.0 samples/s acc 75.0 % eta 0:00:20`: what is known of them."""
    hits, judged = task.fields.get("hits", 0), task.fields.get("judged", 0)
    return " ".join(figures(task.finished_speed or task.speed, hits, judged, task.time_remaining))


class FiguresColumn(ProgressColumn):
    def __init__(self, figures: Figures) -> None:
        super().__init__(table_column=_fixed())
        self.figures = figures

    def render(self, task: Task) -> Text:
        return Text(figures_text(task, self.figures))


class LabelColumn(ProgressColumn):
    """The label, cut to what the terminal leaves beside the bar and the figures."""

    def __init__(self, label: str, console: Console, figures: Figures) -> None:
        super().__init__(table_column=_fixed())
        self.label, self.console, self.figures = label, console, figures

    def render(self, task: Task) -> Text:
        total = f"{task.total:.0f}" if task.total is not None else "?"
        others = BAR_WIDTH + len(f"{total}/{total}") + len(figures_text(task, self.figures)) + 3  # 3 gaps
        text = Text(self.label)
        text.truncate(max(1, self.console.width - others - 1), overflow="ellipsis")
        return text


def progress_bar(label: str, figures: Figures, console: Console | None = None, get_time=None) -> Progress:
    """A transient bar on stderr (or `console`; `get_time` a clock other than rich's); its task takes the
    fields hits and judged."""
    console = console or Console(stderr=True)
    columns = (
        LabelColumn(label, console, figures),
        BarColumn(bar_width=BAR_WIDTH, table_column=_fixed()),
        MofNCompleteColumn(table_column=_fixed()),
        FiguresColumn(figures),
    )
    return Progress(*columns, console=console, transient=True, get_time=get_time)
