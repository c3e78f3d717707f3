"""`harness flash`, through the board's driver always: a real board gets its PlatformIO project uploaded (harness's
protocol, or with --protocol eembc the card's MLPerf Tiny DUT) and must then answer as the firmware just built;
QEMU and hosted boards build and boot their firmware; the virtual board has nothing to flash."""

from harness.boards import get_board
from harness.cli.projects import ProjectRequest, builds_dut, refuse_eembc_mode
from harness.console import print_json, stdout_console
from harness.errors import UserError

UPLOAD_FAILED = "the upload did not take; check the port and the probe"


def cmd_flash(args) -> int:
    from harness.device.drivers import driver_type

    board = get_board(args.board)
    driver = driver_type(board)
    if driver.uploads_project:
        return flash_project(args, board)
    return flash_started(args, board) if driver.flashes else nothing_to_flash(args, board, driver)


def nothing_to_flash(args, board, driver) -> int:
    """The virtual board runs any model as it is, with either protocol."""
    refuse_eembc_mode(args)
    driver.refuse_port(board, args.port)
    _say_flashed(
        args,
        {"board": board.id, "flashed": False},
        "the virtual board runs the model each command names; there is nothing to flash",
    )
    return 0


def flash_started(args, board) -> int:
    """A board harness starts: its driver boots the firmware it builds (with the model when --tflm is given;
    with --protocol eembc the card's DUT, performance mode)."""
    from harness.api.resolve import tflm_tree
    from harness.device.drivers import ConnectOptions, driver_for

    if args.eembc_mode == "energy":
        refuse_eembc_mode(args)
        raise UserError(
            f"--eembc-mode energy builds firmware that pulses a timestamp pin for the runner's IO manager, which "
            f"{board.id} ({board.kind} board) lacks: flash it in performance mode (drop --eembc-mode)"
        )
    tflm = tflm_tree(args)
    if tflm is None and builds_dut(args):
        raise UserError(
            "--protocol eembc flashes the card's MLPerf Tiny DUT firmware, built with its model: pass --tflm PATH"
        )
    refuse_eembc_mode(args)
    request = ProjectRequest.named_by(args, board) if tflm is not None else None
    options = ConnectOptions.named_by(args, tflm=tflm, **_dut_options(request))
    info = driver_for(board, request.model if request else None, options).flash()
    if request and request.dut:
        _check_dut_answers(board, request.dut, info, f"the firmware {board.id} booted is not the one just built")
        _say_flashed(args, *_dut_flashed(board, request, info, None, f"{board.id}: booted"))
        return 0
    what = f"model {info.model_sha256_prefix}…" if request else "self-test firmware (no model: pass --tflm PATH)"
    _say_flashed(
        args,
        {"board": board.id, "flashed": True, "protocol": args.protocol}
        | {"model_sha256_prefix": info.model_sha256_prefix if request else None}
        | _device_info(info),
        f"{board.id}: firmware {info.build_id} booted and answered HELLO; {what}",
        f"  protocol v{info.protocol_version}, frames {info.max_request_frame}/{info.max_response_frame} B, "
        f"timer {info.tick_kind.name.lower()} at {info.tick_hz:,} Hz",
    )
    return 0


def flash_project(args, board) -> int:
    """A real board: its driver uploads the generated PlatformIO project, then the firmware must answer as the one
    just built: harness's HELLO its model hash and build id; the MLPerf Tiny DUT `name` the board id and `profile`
    the card's [eembc] model (at 9600 baud an energy-mode build, whose `timestamp` prints no line)."""
    from harness.device.drivers import ConnectOptions, driver_for
    from harness.device.launch import with_link_options

    request = ProjectRequest.named_by(args, board)
    dut, model = request.dut, request.model
    linked = with_link_options(board, baud=dut.baud if dut else None, protocol=args.protocol)
    driver = driver_for(linked, model, ConnectOptions.named_by(args, **_dut_options(request)))  # refuses first
    project = request.generate(args)
    built = {"project": str(project.path), "kernels": project.kernels}
    if dut is None:
        info = driver.flash(project)
        if info.model_sha256_prefix != model.sha256[:16] or info.build_id != project.build_id:
            raise UserError(
                f"{board.id} answers with model {info.model_sha256_prefix}… and firmware {info.build_id}, expected "
                f"{model.sha256[:16]}… and {project.build_id}: {UPLOAD_FAILED}"
            )
        figures = {"board": board.id, "flashed": True, "protocol": args.protocol, "model": request.card.name}
        _say_flashed(
            args,
            figures | {"model_sha256_prefix": model.sha256[:16]} | _device_info(info) | built,
            f"{board.id}: flashed {project.build_id} ({project.kernels} kernels), model {request.card.name}",
        )
        return 0
    info = _energy_build_answers(driver, request, project) if dut.energy else driver.flash(project)
    _check_dut_answers(board, dut, info, UPLOAD_FAILED)
    headline = f"{board.id}: flashed {project.build_id} ({project.kernels} kernels)"
    _say_flashed(args, *_dut_flashed(board, request, info, built, headline))
    return 0


def _dut_options(request: "ProjectRequest | None") -> dict:
    """The connection's options for the card's DUT firmware: its [eembc] table and what it computes."""
    if request is None or request.dut is None:
        return {}
    return {"eembc": request.card.eembc, "computation": request.computation}


def _energy_build_answers(driver, request, project):
    """Upload, then `name`, `profile` and `timestamp` at the energy build's 9600 baud: no session can use such
    firmware (it prints no timestamps), so its answers are read here, not through one."""
    from harness.link.eembc import EembcClient

    driver.upload(project)
    computation = request.computation
    with driver.start() as endpoint:
        return EembcClient(endpoint.link, computation.input, computation.output, computation=computation).hello(
            energy_mode=True
        )


def _check_dut_answers(board, dut, info, why: str) -> None:
    """The DUT's `name` must be the board id and its `profile` the card's [eembc] model (the DUT reports no
    model hash nor build id)."""
    name, model = info.board_id, info.build_id.removeprefix("eembc:")
    if (name, model) != (board.id, dut.model):
        raise UserError(
            f"{board.id}'s DUT answers name {name} and profile {model}, expected {board.id} and {dut.model} "
            f"(the card's [eembc] model): {why}"
        )


def _dut_flashed(board, request, info, built: dict | None, headline: str) -> tuple[dict, str]:
    """flash's figures and line for DUT firmware: what was built, and what it answered."""
    dut = request.dut
    timestamps = "none on the serial line (energy mode)" if dut.energy else "m-lap-us- lines"
    figures = {"board": board.id, "flashed": True, "protocol": "eembc", "model": request.card.name}
    figures |= {"model_sha256_prefix": request.model.sha256[:16], "eembc_mode": dut.mode, "baud": dut.baud}
    profile = info.build_id.removeprefix("eembc:")
    figures |= {"answers": {"name": info.board_id, "profile": profile, "timestamps": timestamps}} | (built or {})
    line = (
        f"{headline}, MLPerf Tiny DUT of model {request.card.name} ({dut.mode} mode, {dut.baud} baud): it answers "
        f"name {info.board_id}, profile {profile}; timestamps: {timestamps}"
    )
    return figures, line


def _device_info(info) -> dict:
    """What the flashed firmware said in its HELLO, for --json."""
    return {
        "build_id": info.build_id,
        "protocol_version": info.protocol_version,
        "max_request_frame": info.max_request_frame,
        "max_response_frame": info.max_response_frame,
        "tick_kind": info.tick_kind.name.lower(),
        "tick_hz": info.tick_hz,
    }


def _say_flashed(args, figures: dict, headline: str, *details: str) -> None:
    """flash's result: JSON, the headline alone (--quiet), or the headline and its details."""
    if args.json:
        print_json(figures)
        return
    console = stdout_console()
    for line in (headline,) if args.quiet else (headline, *details):
        console.print(line, highlight=False, soft_wrap=True)
