"""Flash and static RAM a firmware image takes, read from its ELF sections."""

from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

NOT_STATIC = {".heap"}  # the heap region the linker reserves is free RAM, not what the firmware uses


def memory_usage(elf: Path) -> dict:
    """Totals and the size of every allocated section: {"flash_bytes", "static_ram_bytes", "sections"}."""
    flash = static_ram = 0
    sections = {}
    with open(elf, "rb") as f:
        for section in ELFFile(f).iter_sections():
            if not section["sh_flags"] & SH_FLAGS.SHF_ALLOC or section.name in NOT_STATIC:
                continue
            sections[section.name] = section["sh_size"]
            loaded = section["sh_type"] != "SHT_NOBITS"
            writable = bool(section["sh_flags"] & SH_FLAGS.SHF_WRITE)
            if loaded:
                flash += section["sh_size"]  # code, constants, the model and .data's initial values
            if writable:
                static_ram += section["sh_size"]  # .data and .bss (the arena lives in .bss)
    return {"flash_bytes": flash, "static_ram_bytes": static_ram, "sections": sections}
