/*
 * price_feed: one instrument's price readings under the cluster clock (docs/programs.md,
 * "price_feed"). A feed is a keypair account owned by this program holding the last
 * accepted reading (value x 10^exponent, the updater's observation time, the cluster slot
 * and time it was accepted at) and a ring of the last FEED_RING_CAPACITY readings. Only the
 * recorded authority updates, re-keys, re-hashes or closes it. Layouts, instructions and
 * error codes: abi.py (abi.h is generated from it).
 *
 * Every account is checked by hand (owner, size, kind, signer, writability), each failing
 * with its own error code; time checks use the Clock sysvar, never the updater's word.
 */
#include "abi.h"

#define MAX_ACCOUNTS 16

typedef struct {
  SolAccountInfo ka[MAX_ACCOUNTS];
} Heap;
#define HEAP ((Heap *)HEAP_START)
_Static_assert(sizeof(Heap) <= HEAP_SIZE, "heap layout");
_Static_assert(FEED_SIZE == sizeof(FeedState) + FEED_RING_CAPACITY * sizeof(FeedRingEntry), "feed size");
_Static_assert((FEED_RING_CAPACITY & (FEED_RING_CAPACITY - 1)) == 0 && FEED_RING_CAPACITY <= 255, "ring index arithmetic");

/* Signed forms of the limits (the generated constants are unsigned). */
#define MAX_FUTURE ((i64)FEED_MAX_FUTURE_SECONDS)
#define MAX_EXPONENT ((i32)FEED_MAX_EXPONENT)
#define MAX_STALENESS ((i64)FEED_MAX_STALENESS_LIMIT)

static inline FeedRingEntry *ring(FeedState *feed) { return (FeedRingEntry *)(feed + 1); }

/* The feed account's existence, owner, size and writability (shared by Initialize and
 * the loaded-feed instructions). */
static u64 check_feed_account(const SolParameters *p, const SolAccountInfo *account) {
  if (*account->lamports == 0) return FEED_ERR_FEED_NOT_FOUND;
  if (!pubkey_eq(account->owner, p->program_id)) return FEED_ERR_FEED_WRONG_OWNER;
  if (account->data_len != FEED_SIZE) return FEED_ERR_FEED_WRONG_SIZE;
  if (!account->is_writable) return FEED_ERR_FEED_NOT_WRITABLE;
  return SUCCESS;
}

/* An initialized feed of the current layout in ``account``, whose recorded authority is
 * ``authority`` and signed. */
static u64 load_feed(const SolParameters *p, const SolAccountInfo *account, const SolAccountInfo *authority, FeedState **out) {
  u64 r = check_feed_account(p, account);
  if (r) return r;
  FeedState *feed = (FeedState *)account->data;
  if (feed->kind != FEED_KIND || feed->version != FEED_LAYOUT_VERSION || feed->ring_len > FEED_RING_CAPACITY ||
      feed->ring_head >= FEED_RING_CAPACITY)
    return FEED_ERR_FEED_INVALID;
  if (!pubkey_eq(&feed->authority, authority->key)) return FEED_ERR_AUTHORITY_MISMATCH;
  if (!authority->is_signer) return FEED_ERR_AUTHORITY_NOT_SIGNER;
  *out = feed;
  return SUCCESS;
}

/* An initialized mint of SPL Token or Token-2022 (both share the base layout; Token-2022
 * mints with extensions say so in their account-type byte). */
static bool is_mint(const SolAccountInfo *mint) {
  if (!is_token_program(mint->owner)) return false;
  if (mint->data_len < TOKEN_MINT_SIZE || mint->data[TOKEN_MINT_INITIALIZED] != 1) return false;
  if (mint->data_len > TOKEN_ACCOUNT_TYPE_OFFSET && mint->data[TOKEN_ACCOUNT_TYPE_OFFSET] != 1) return false;
  return mint->data_len == TOKEN_MINT_SIZE || mint->data_len > TOKEN_ACCOUNT_TYPE_OFFSET;
}

/* --- Initialize ------------------------------------------------------------------------- */
static u64 initialize(const SolParameters *p) {
  if (p->data_len != sizeof(FeedInitializeArgs)) return FEED_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < FEED_INITIALIZE_ACCOUNTS) return FEED_ERR_NOT_ENOUGH_ACCOUNTS;
  const FeedInitializeArgs *args = (const FeedInitializeArgs *)p->data;
  const SolAccountInfo *account = &p->ka[FEED_INITIALIZE_FEED];
  const SolAccountInfo *authority = &p->ka[FEED_INITIALIZE_AUTHORITY];
  const SolAccountInfo *mint = &p->ka[FEED_INITIALIZE_MINT];
  u64 r = check_feed_account(p, account);
  if (r) return r;
  /* The feed's own key signs: created and initialized by whoever holds its keypair (in
   * one transaction), so nobody can initialize another's freshly created account. */
  if (!account->is_signer) return FEED_ERR_FEED_NOT_SIGNER;
  FeedState *feed = (FeedState *)account->data;
  if (feed->kind != 0) return FEED_ERR_FEED_ALREADY_INITIALIZED;
  if (!authority->is_signer) return FEED_ERR_AUTHORITY_NOT_SIGNER;
  if (!is_mint(mint)) return FEED_ERR_MINT_INVALID;
  if (args->exponent < -MAX_EXPONENT || args->exponent > MAX_EXPONENT) return FEED_ERR_INVALID_EXPONENT;
  if (args->max_staleness < 1 || args->max_staleness > MAX_STALENESS) return FEED_ERR_INVALID_MAX_STALENESS;

  /* Fresh data: all zero but the header below (round 0, no reading, empty ring). */
  sol_memset_(account->data, 0, FEED_SIZE);
  feed->kind = FEED_KIND;
  feed->version = FEED_LAYOUT_VERSION;
  feed->exponent = args->exponent;
  feed->max_staleness = args->max_staleness;
  pubkey_copy(&feed->authority, authority->key);
  pubkey_copy(&feed->mint, mint->key);
  sol_memcpy_(feed->job_hash, args->job_hash, sizeof(feed->job_hash));
  return SUCCESS;
}

/* --- Update ------------------------------------------------------------------------------ */
static u64 update(const SolParameters *p) {
  if (p->data_len != sizeof(FeedUpdateArgs)) return FEED_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < FEED_UPDATE_ACCOUNTS) return FEED_ERR_NOT_ENOUGH_ACCOUNTS;
  const FeedUpdateArgs *args = (const FeedUpdateArgs *)p->data;
  FeedState *feed;
  u64 r = load_feed(p, &p->ka[FEED_UPDATE_FEED], &p->ka[FEED_UPDATE_AUTHORITY], &feed);
  if (r) return r;
  /* Rounds strictly increase and observations never go back: a replayed or late update
   * cannot overwrite a newer reading. */
  if (args->round <= feed->round) return FEED_ERR_OUT_OF_ORDER;
  if (args->observed_at < feed->observed_at) return FEED_ERR_OUT_OF_ORDER;
  SolClock clock;
  if (sol_get_clock_sysvar(&clock) != 0) return BUILTIN(17); /* UnsupportedSysvar: no runtime lacks the Clock */
  /* No arithmetic on the updater's numbers: the clock's are bounded (now ± at most a year). */
  if (args->observed_at > clock.unix_timestamp + MAX_FUTURE) return FEED_ERR_FROM_FUTURE;
  if (args->observed_at < clock.unix_timestamp - feed->max_staleness) return FEED_ERR_STALE;

  feed->round = args->round;
  feed->value = args->value;
  feed->observed_at = args->observed_at;
  feed->slot = clock.slot;
  feed->unix_time = clock.unix_timestamp;
  u8 head = feed->ring_len == 0 ? 0 : (u8)((feed->ring_head + 1) & (FEED_RING_CAPACITY - 1));
  FeedRingEntry *entry = &ring(feed)[head];
  entry->round = args->round;
  entry->value = args->value;
  entry->observed_at = args->observed_at;
  entry->slot = clock.slot;
  feed->ring_head = head;
  if (feed->ring_len < FEED_RING_CAPACITY) feed->ring_len += 1;
  return SUCCESS;
}

/* --- SetAuthority ------------------------------------------------------------------------ */
static u64 set_authority(const SolParameters *p) {
  if (p->data_len != sizeof(FeedSetAuthorityArgs)) return FEED_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < FEED_SET_AUTHORITY_ACCOUNTS) return FEED_ERR_NOT_ENOUGH_ACCOUNTS;
  const FeedSetAuthorityArgs *args = (const FeedSetAuthorityArgs *)p->data;
  FeedState *feed;
  u64 r = load_feed(p, &p->ka[FEED_SET_AUTHORITY_FEED], &p->ka[FEED_SET_AUTHORITY_AUTHORITY], &feed);
  if (r) return r;
  if (pubkey_is_zero(&args->new_authority)) return FEED_ERR_ZERO_AUTHORITY;
  pubkey_copy(&feed->authority, &args->new_authority);
  return SUCCESS;
}

/* --- SetJobHash -------------------------------------------------------------------------- */
static u64 set_job_hash(const SolParameters *p) {
  if (p->data_len != sizeof(FeedSetJobHashArgs)) return FEED_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < FEED_SET_JOB_HASH_ACCOUNTS) return FEED_ERR_NOT_ENOUGH_ACCOUNTS;
  const FeedSetJobHashArgs *args = (const FeedSetJobHashArgs *)p->data;
  FeedState *feed;
  u64 r = load_feed(p, &p->ka[FEED_SET_JOB_HASH_FEED], &p->ka[FEED_SET_JOB_HASH_AUTHORITY], &feed);
  if (r) return r;
  sol_memcpy_(feed->job_hash, args->job_hash, sizeof(feed->job_hash));
  return SUCCESS;
}

/* --- Close ------------------------------------------------------------------------------- */
static u64 close_feed(const SolParameters *p) {
  if (p->data_len != sizeof(FeedCloseArgs)) return FEED_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < FEED_CLOSE_ACCOUNTS) return FEED_ERR_NOT_ENOUGH_ACCOUNTS;
  const SolAccountInfo *account = &p->ka[FEED_CLOSE_FEED];
  const SolAccountInfo *recipient = &p->ka[FEED_CLOSE_RECIPIENT];
  FeedState *feed;
  u64 r = load_feed(p, account, &p->ka[FEED_CLOSE_AUTHORITY], &feed);
  if (r) return r;
  if (!recipient->is_writable) return FEED_ERR_RECIPIENT_NOT_WRITABLE;
  if (pubkey_eq(recipient->key, account->key)) return FEED_ERR_INVALID_RECIPIENT;
  /* Data zeroed first (a closed feed reads as no feed, even if lamports come back within
   * this transaction), then every lamport to the recipient; the runtime deletes the
   * account at the end of the transaction. */
  sol_memset_(account->data, 0, account->data_len);
  *recipient->lamports += *account->lamports;
  *account->lamports = 0;
  return SUCCESS;
}

u64 entrypoint(const u8 *input) {
  SolParameters p = {.ka = HEAP->ka};
  if (!sol_deserialize(input, &p, MAX_ACCOUNTS)) return FEED_ERR_TOO_MANY_ACCOUNTS;
  if (p.data_len < 1) return FEED_ERR_INVALID_INSTRUCTION;
  switch (p.data[0]) {
    case FEED_IX_INITIALIZE:
      return initialize(&p);
    case FEED_IX_UPDATE:
      return update(&p);
    case FEED_IX_SET_AUTHORITY:
      return set_authority(&p);
    case FEED_IX_SET_JOB_HASH:
      return set_job_hash(&p);
    case FEED_IX_CLOSE:
      return close_feed(&p);
    default:
      return FEED_ERR_INVALID_INSTRUCTION;
  }
}
