"""Build tools for the project's onchain programs (standard library only): the SBPF v0
linker (link.py), the ABI definitions and their C header generator (abi.py) and the build
driver (build.py, ``make programs``)."""
