"""Token-2022: instruction encoders, TLV decoders and the account size calculator.

No Python library encodes the Token-2022 extension instructions; these follow the
program's own layouts (spl-token-2022 instruction.rs and the extension modules) and are
verified by executing them on the local node and decoding the resulting accounts.
"""
