/*
 * lending: lenders' loan strategies and borrowers' loan escrows, collateral valued by the
 * price feed program's feeds (docs/programs.md, "lending"). Layouts, instructions and
 * error codes: abi.py (abi.h is generated from it); shared pieces: lending.h.
 *
 * Every account is checked by hand: owners, signers, writability, PDAs, mints, token
 * accounts and feeds, each failing with its own error code.
 */
#include "lending.h"

u64 entrypoint(const u8 *input) {
  SolParameters p = {.ka = HEAP->ka};
  if (!sol_deserialize(input, &p, MAX_ACCOUNTS)) return LEND_ERR_TOO_MANY_ACCOUNTS;
  if (p.data_len < 1) return LEND_ERR_INVALID_INSTRUCTION;
  switch (p.data[0]) {
    case LEND_IX_INITIALIZE_STRATEGY:
      return initialize_strategy(&p);
    case LEND_IX_SET_TERMS:
      return set_terms(&p);
    case LEND_IX_SET_MINT:
      return set_mint(&p);
    case LEND_IX_REMOVE_MINT:
      return remove_mint(&p);
    case LEND_IX_DEPOSIT_LIQUIDITY:
      return deposit_liquidity(&p);
    case LEND_IX_WITHDRAW_LIQUIDITY:
      return withdraw_liquidity(&p);
    case LEND_IX_CREATE_LOAN:
      return create_loan(&p);
    case LEND_IX_DEPOSIT_COLLATERAL:
      return deposit_collateral(&p);
    case LEND_IX_BORROW:
      return borrow(&p);
    case LEND_IX_WITHDRAW_COLLATERAL:
      return withdraw_collateral(&p);
    case LEND_IX_REPAY:
      return repay(&p);
    case LEND_IX_REFINANCE:
      return refinance(&p);
    case LEND_IX_LIQUIDATE:
      return liquidate(&p);
    case LEND_IX_CLAIM_COLLATERAL:
      return claim_collateral(&p);
    case LEND_IX_CLOSE_LOAN:
      return close_loan(&p);
    default:
      return LEND_ERR_INVALID_INSTRUCTION;
  }
}
