"""The node's JSON-RPC error, and how a validator words a transaction error.

The texts are the Display of TransactionError (solana-sdk `transaction-error/src/lib.rs`)
and InstructionError (`instruction-error/src/lib.rs`), read from anza-xyz/solana-sdk
master: clients match on them (a preflight failure's -32002 message is "Transaction
simulation failed: " + this text). A transaction error arrives here in its RPC JSON form
(admission.err_json): a variant name for the fieldless ones, else a one-key object.
"""

from __future__ import annotations


class RpcError(Exception):
    """A JSON-RPC error answer (code, message, data)."""

    def __init__(self, code: int, message: str, data: object = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


#: TransactionError's fieldless variants → their Display. The variants with fields
#: (InstructionError, DuplicateInstruction, InsufficientFundsForRent,
#: ProgramExecutionTemporarilyRestricted) are worded by transaction_error_text.
TRANSACTION_TEXTS = {
    "AccountInUse": "Account in use",
    "AccountLoadedTwice": "Account loaded twice",
    "AccountNotFound": "Attempt to debit an account but found no record of a prior credit.",
    "ProgramAccountNotFound": "Attempt to load a program that does not exist",
    "InsufficientFundsForFee": "Insufficient funds for fee",
    "InvalidAccountForFee": "This account may not be used to pay transaction fees",
    "AlreadyProcessed": "This transaction has already been processed",
    "BlockhashNotFound": "Blockhash not found",
    "CallChainTooDeep": "Loader call chain is too deep",
    "MissingSignatureForFee": "Transaction requires a fee but has no signature present",
    "InvalidAccountIndex": "Transaction contains an invalid account reference",
    "SignatureFailure": "Transaction did not pass signature verification",
    "InvalidProgramForExecution": "This program may not be used for executing instructions",
    "SanitizeFailure": "Transaction failed to sanitize accounts offsets correctly",
    "ClusterMaintenance": "Transactions are currently disabled due to cluster maintenance",
    "AccountBorrowOutstanding": "Transaction processing left an account with an outstanding borrowed reference",
    "WouldExceedMaxBlockCostLimit": "Transaction would exceed max Block Cost Limit",
    "UnsupportedVersion": "Transaction version is unsupported",
    "InvalidWritableAccount": "Transaction loads a writable account that cannot be written",
    "WouldExceedMaxAccountCostLimit": "Transaction would exceed max account limit within the block",
    "WouldExceedAccountDataBlockLimit": "Transaction would exceed account data limit within the block",
    "TooManyAccountLocks": "Transaction locked too many accounts",
    "AddressLookupTableNotFound": "Transaction loads an address table account that doesn't exist",
    "InvalidAddressLookupTableOwner": "Transaction loads an address table account with an invalid owner",
    "InvalidAddressLookupTableData": "Transaction loads an address table account with invalid data",
    "InvalidAddressLookupTableIndex": "Transaction address table lookup uses an invalid index",
    "InvalidRentPayingAccount": "Transaction leaves an account with a lower balance than rent-exempt minimum",
    "WouldExceedMaxVoteCostLimit": "Transaction would exceed max Vote Cost Limit",
    "WouldExceedAccountDataTotalLimit": "Transaction would exceed total account data limit",
    "MaxLoadedAccountsDataSizeExceeded": "Transaction exceeded max loaded accounts data size cap",
    "InvalidLoadedAccountsDataSizeLimit": "LoadedAccountsDataSizeLimit set for transaction must be greater than 0.",
    # Agave's Display writes these two as their names.
    "ResanitizationNeeded": "ResanitizationNeeded",
    "UnbalancedTransaction": "Sum of account balances before and after transaction do not match",
    "ProgramCacheHitMaxLimit": "Program cache hit max limit",
    "CommitCancelled": "CommitCancelled",
}

#: InstructionError's fieldless variants → their Display (Custom(n) is
#: "custom program error: 0x…", instruction_error_text).
INSTRUCTION_TEXTS = {
    "GenericError": "generic instruction error",
    "InvalidArgument": "invalid program argument",
    "InvalidInstructionData": "invalid instruction data",
    "InvalidAccountData": "invalid account data for instruction",
    "AccountDataTooSmall": "account data too small for instruction",
    "InsufficientFunds": "insufficient funds for instruction",
    "IncorrectProgramId": "incorrect program id for instruction",
    "MissingRequiredSignature": "missing required signature for instruction",
    "AccountAlreadyInitialized": "instruction requires an uninitialized account",
    "UninitializedAccount": "instruction requires an initialized account",
    "UnbalancedInstruction": "sum of account balances before and after instruction do not match",
    "ModifiedProgramId": "instruction illegally modified the program id of an account",
    "ExternalAccountLamportSpend": "instruction spent from the balance of an account it does not own",
    "ExternalAccountDataModified": "instruction modified data of an account it does not own",
    "ReadonlyLamportChange": "instruction changed the balance of a read-only account",
    "ReadonlyDataModified": "instruction modified data of a read-only account",
    "DuplicateAccountIndex": "instruction contains duplicate accounts",
    "ExecutableModified": "instruction changed executable bit of an account",
    "RentEpochModified": "instruction modified rent epoch of an account",
    "NotEnoughAccountKeys": "insufficient account keys for instruction",
    "AccountDataSizeChanged": "program other than the account's owner changed the size of the account data",
    "AccountNotExecutable": "instruction expected an executable account",
    "AccountBorrowFailed": "instruction tries to borrow reference for an account which is already borrowed",
    "AccountBorrowOutstanding": "instruction left account with an outstanding borrowed reference",
    "DuplicateAccountOutOfSync": "instruction modifications of multiply-passed account differ",
    "InvalidError": "program returned invalid error code",
    "ExecutableDataModified": "instruction changed executable accounts data",
    "ExecutableLamportChange": "instruction changed the balance of an executable account",
    "ExecutableAccountNotRentExempt": "executable accounts must be rent exempt",
    "UnsupportedProgramId": "Unsupported program id",
    "CallDepth": "Cross-program invocation call depth too deep",
    "MissingAccount": "An account required by the instruction is missing",
    "ReentrancyNotAllowed": "Cross-program invocation reentrancy not allowed for this instruction",
    "MaxSeedLengthExceeded": "Length of the seed is too long for address generation",
    "InvalidSeeds": "Provided seeds do not result in a valid address",
    "InvalidRealloc": "Failed to reallocate account data",
    "ComputationalBudgetExceeded": "Computational budget exceeded",
    "PrivilegeEscalation": "Cross-program invocation with unauthorized signer or writable account",
    "ProgramEnvironmentSetupFailure": "Failed to create program execution environment",
    "ProgramFailedToComplete": "Program failed to complete",
    "ProgramFailedToCompile": "Program failed to compile",
    "Immutable": "Account is immutable",
    "IncorrectAuthority": "Incorrect authority provided",
    "BorshIoError": "Failed to serialize or deserialize account data",
    "AccountNotRentExempt": "An account does not have enough lamports to be rent-exempt",
    "InvalidAccountOwner": "Invalid account owner",
    "ArithmeticOverflow": "Program arithmetic overflowed",
    "UnsupportedSysvar": "Unsupported sysvar",
    "IllegalOwner": "Provided owner is not allowed",
    "MaxAccountsDataAllocationsExceeded": "Accounts data allocations exceeded the maximum allowed per transaction",
    "MaxAccountsExceeded": "Max accounts exceeded",
    "MaxInstructionTraceLengthExceeded": "Max instruction trace length exceeded",
    "BuiltinProgramsMustConsumeComputeUnits": "Builtin programs must consume compute units",
    "BailOut": "Block production bailed out",
}


def instruction_error_text(detail) -> str:
    """InstructionError's Display for its JSON form: a variant name, {"Custom": n}, or
    {"BorshIoError": message} (SDKs before the variant lost its message)."""
    if isinstance(detail, dict) and len(detail) == 1:
        ((name, value),) = detail.items()
        if name == "Custom" and isinstance(value, int):
            return f"custom program error: {value:#x}"
        if name == "BorshIoError":
            return f"{INSTRUCTION_TEXTS['BorshIoError']}: {value}"
    if isinstance(detail, str) and detail in INSTRUCTION_TEXTS:
        return INSTRUCTION_TEXTS[detail]
    return str(detail)  # a variant newer than this table: its name, never a Python repr


def transaction_error_text(err) -> str:
    """TransactionError's Display for its JSON form."""
    if isinstance(err, str):
        return TRANSACTION_TEXTS.get(err, err)
    if isinstance(err, dict) and len(err) == 1:
        ((name, value),) = err.items()
        if name == "InstructionError" and isinstance(value, (list, tuple)) and len(value) == 2:
            return f"Error processing Instruction {value[0]}: {instruction_error_text(value[1])}"
        if name == "DuplicateInstruction":
            return f"Transaction contains a duplicate instruction ({value}) that is not allowed"
        index = value.get("account_index") if isinstance(value, dict) else None
        if name == "InsufficientFundsForRent" and index is not None:
            return f"Transaction results in an account ({index}) with insufficient funds for rent"
        if name == "ProgramExecutionTemporarilyRestricted" and index is not None:
            return f"Execution of the program referenced by account at index {index} is temporarily restricted."
        return name
    return str(err)
