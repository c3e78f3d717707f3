"""Time one input on a board: repeated invokes (perf) or one invoke operator by operator (profile).
`harness perf` and `harness profile` call these too."""

import dataclasses
from types import SimpleNamespace

from harness.console import quieted
from harness.defaults import DEFAULT_BOARD, DEFAULT_MODEL, DEMO, MLPERF_WINDOW_SECONDS
from harness.link.registry import NATIVE_PROTOCOL


def _timed(connection: SimpleNamespace, measure, roles: tuple[type, ...] = ()):
    """What `measure(client, board, input, model)` returns, on the board running the model (a TfliteModel),
    with the dataset's first input (or `connection.sample`'s); its report names the model's card. `roles`:
    those `measure` uses beyond the core session (harness/link/roles.py), refused before the board starts
    where the protocol lacks one."""
    from harness.api.resolve import emulated_tflm_tree, model_for
    from harness.boards import get_board
    from harness.device.drivers import driver_for
    from harness.device.launch import ConnectOptions, with_link_options
    from harness.eval.perf import chosen_sample, sample_tensor
    from harness.eval.tasks import DatasetRequest, task_for
    from harness.model.cards import load_card
    from harness.model.dut import device_bytes, dut_computation

    board = with_link_options(
        get_board(connection.board),
        emulate_invoke_ms=connection.emulate_invoke_ms,
        link_baud=getattr(connection, "link_baud", None),
        baud=connection.baud,
        protocol=connection.protocol,
    )
    task = task_for(load_card(connection.model))
    sample = getattr(connection, "sample", None)
    # Before a model is fetched; one input is run, so no F1 pool is streamed.
    limit = None if sample else 1
    dataset = task.load_dataset(DatasetRequest(connection.dataset, task.subsets("all"), limit=limit))
    card, model = model_for(connection, board)
    computation = dut_computation(card, model)  # what the device computes: the model's tensors, or its DUT's
    tensor = sample_tensor(card, computation, model, dataset, sample)
    connection.sample_id = chosen_sample(dataset, sample).id  # the one run, for a report that names it
    options = ConnectOptions.named_by(
        connection,
        tflm=emulated_tflm_tree(connection, board),
        roles=roles,
        eembc=card.eembc,
        computation=computation,
    )
    driver = driver_for(board, model, options)  # what the board and the protocol rule out is refused here
    data = device_bytes(driver.share, tensor)  # the model's input, where the host does the DUT's part
    with driver.session() as client:
        return dataclasses.replace(measure(client, board, data, model), model=card.name)


def perf(
    model: str = DEFAULT_MODEL,
    *,
    board: str = DEFAULT_BOARD,
    port: str | None = None,
    model_file: str | None = None,
    dataset: str = DEMO,
    runs: int = 50,
    warmups: int = 5,
    mlperf: bool = False,
    meter: str | None = None,
    window_seconds: float = MLPERF_WINDOW_SECONDS,
    protocol: str = NATIVE_PROTOCOL,
    baud: int | None = None,
    emulate_invoke_ms: float | None = None,
    tflm: str | None = None,
    progress: bool = False,
):
    """Time `runs` invokes of the dataset's first input after `warmups` untimed ones: a PerfReport (each
    figure in its unit, with its source; `.stats()` gives min, median, p95, max). `mlperf`: also the median
    of 5 windows of >= 10 s; `meter` (KIND:ADDRESS): energy per inference in windows of `window_seconds`."""
    from harness.energy.meter import open_live_meter
    from harness.eval.perf import run_perf

    connection = SimpleNamespace(**locals())
    with quieted(not progress):
        live = open_live_meter(meter, "the invokes") if meter else None  # a bad spec: before the board

        def measure(client, started, data, _model):
            return run_perf(client, started, data, runs, warmups, mlperf, live, window_seconds)

        try:
            return _timed(connection, measure)
        finally:
            if live is not None:
                live.close()


def profile(
    model: str = DEFAULT_MODEL,
    *,
    board: str = DEFAULT_BOARD,
    port: str | None = None,
    model_file: str | None = None,
    dataset: str = DEMO,
    protocol: str = NATIVE_PROTOCOL,
    baud: int | None = None,
    tflm: str | None = None,
    progress: bool = False,
):
    """Time one invoke of the dataset's first input operator by operator: a ProfileReport (the whole invoke,
    each operator's figure with its source, and the share the operators account for). The virtual board's
    host interpreter has no per-operator timer: QEMU and real boards do."""
    from harness.eval.perf import run_profile

    connection = SimpleNamespace(**locals(), emulate_invoke_ms=None)
    with quieted(not progress):
        from harness.link.roles import Profiling

        def measure(client, started, data, _model):
            return run_profile(client, started, data)

        return _timed(connection, measure, (Profiling,))
