/* Generated from programs/price_feed/abi.py by programs/toolchain/build.py: do not edit. */
/* Price feeds: one instrument's last accepted readings, updated by its authority under the cluster clock. */
#ifndef FEED_ABI_H
#define FEED_ABI_H
#include "sbf.h"

/* --- constants --- */
#define FEED_KIND 3ULL
#define FEED_LAYOUT_VERSION 1ULL
#define FEED_RING_CAPACITY 8ULL
#define FEED_SIZE 408ULL
#define FEED_MAX_FUTURE_SECONDS 60ULL
#define FEED_MAX_EXPONENT 18ULL
#define FEED_MAX_STALENESS_LIMIT 31622400ULL

/* --- account layouts --- */
/* Feed header; RING_CAPACITY FeedRingEntry (32 bytes each) follow it, the newest at ring_head, the first ring_len accepted ones in use. */
typedef struct {
  u8 kind;
  u8 version;
  u8 ring_len;
  u8 ring_head;
  i32 exponent;
  u64 round;
  i64 value;
  i64 observed_at;
  u64 slot;
  i64 unix_time;
  i64 max_staleness;
  SolPubkey authority;
  SolPubkey mint;
  u8 job_hash[32];
} FeedState;
_Static_assert(sizeof(FeedState) == 152, "FeedState size");
_Static_assert(offsetof(FeedState, kind) == 0, "FeedState.kind");
_Static_assert(offsetof(FeedState, version) == 1, "FeedState.version");
_Static_assert(offsetof(FeedState, ring_len) == 2, "FeedState.ring_len");
_Static_assert(offsetof(FeedState, ring_head) == 3, "FeedState.ring_head");
_Static_assert(offsetof(FeedState, exponent) == 4, "FeedState.exponent");
_Static_assert(offsetof(FeedState, round) == 8, "FeedState.round");
_Static_assert(offsetof(FeedState, value) == 16, "FeedState.value");
_Static_assert(offsetof(FeedState, observed_at) == 24, "FeedState.observed_at");
_Static_assert(offsetof(FeedState, slot) == 32, "FeedState.slot");
_Static_assert(offsetof(FeedState, unix_time) == 40, "FeedState.unix_time");
_Static_assert(offsetof(FeedState, max_staleness) == 48, "FeedState.max_staleness");
_Static_assert(offsetof(FeedState, authority) == 56, "FeedState.authority");
_Static_assert(offsetof(FeedState, mint) == 88, "FeedState.mint");
_Static_assert(offsetof(FeedState, job_hash) == 120, "FeedState.job_hash");

/* One accepted reading in the ring. */
typedef struct {
  u64 round;
  i64 value;
  i64 observed_at;
  u64 slot;
} FeedRingEntry;
_Static_assert(sizeof(FeedRingEntry) == 32, "FeedRingEntry size");
_Static_assert(offsetof(FeedRingEntry, round) == 0, "FeedRingEntry.round");
_Static_assert(offsetof(FeedRingEntry, value) == 8, "FeedRingEntry.value");
_Static_assert(offsetof(FeedRingEntry, observed_at) == 16, "FeedRingEntry.observed_at");
_Static_assert(offsetof(FeedRingEntry, slot) == 24, "FeedRingEntry.slot");

/* --- instructions: selector, data layout, accounts in order --- */
#define FEED_IX_INITIALIZE 0
typedef struct {
  u8 tag;
  u8 _pad[3];
  i32 exponent;
  i64 max_staleness;
  u8 job_hash[32];
} FeedInitializeArgs;
_Static_assert(sizeof(FeedInitializeArgs) == 48, "FeedInitializeArgs size");
_Static_assert(offsetof(FeedInitializeArgs, tag) == 0, "FeedInitializeArgs.tag");
_Static_assert(offsetof(FeedInitializeArgs, _pad) == 1, "FeedInitializeArgs._pad");
_Static_assert(offsetof(FeedInitializeArgs, exponent) == 4, "FeedInitializeArgs.exponent");
_Static_assert(offsetof(FeedInitializeArgs, max_staleness) == 8, "FeedInitializeArgs.max_staleness");
_Static_assert(offsetof(FeedInitializeArgs, job_hash) == 16, "FeedInitializeArgs.job_hash");
enum {
  FEED_INITIALIZE_FEED = 0,
  FEED_INITIALIZE_AUTHORITY = 1,
  FEED_INITIALIZE_MINT = 2,
  FEED_INITIALIZE_ACCOUNTS = 3,
};

#define FEED_IX_UPDATE 1
typedef struct {
  u8 tag;
  u8 _pad[7];
  u64 round;
  i64 value;
  i64 observed_at;
} FeedUpdateArgs;
_Static_assert(sizeof(FeedUpdateArgs) == 32, "FeedUpdateArgs size");
_Static_assert(offsetof(FeedUpdateArgs, tag) == 0, "FeedUpdateArgs.tag");
_Static_assert(offsetof(FeedUpdateArgs, _pad) == 1, "FeedUpdateArgs._pad");
_Static_assert(offsetof(FeedUpdateArgs, round) == 8, "FeedUpdateArgs.round");
_Static_assert(offsetof(FeedUpdateArgs, value) == 16, "FeedUpdateArgs.value");
_Static_assert(offsetof(FeedUpdateArgs, observed_at) == 24, "FeedUpdateArgs.observed_at");
enum {
  FEED_UPDATE_FEED = 0,
  FEED_UPDATE_AUTHORITY = 1,
  FEED_UPDATE_ACCOUNTS = 2,
};

#define FEED_IX_SET_AUTHORITY 2
typedef struct {
  u8 tag;
  u8 _pad[7];
  SolPubkey new_authority;
} FeedSetAuthorityArgs;
_Static_assert(sizeof(FeedSetAuthorityArgs) == 40, "FeedSetAuthorityArgs size");
_Static_assert(offsetof(FeedSetAuthorityArgs, tag) == 0, "FeedSetAuthorityArgs.tag");
_Static_assert(offsetof(FeedSetAuthorityArgs, _pad) == 1, "FeedSetAuthorityArgs._pad");
_Static_assert(offsetof(FeedSetAuthorityArgs, new_authority) == 8, "FeedSetAuthorityArgs.new_authority");
enum {
  FEED_SET_AUTHORITY_FEED = 0,
  FEED_SET_AUTHORITY_AUTHORITY = 1,
  FEED_SET_AUTHORITY_ACCOUNTS = 2,
};

#define FEED_IX_SET_JOB_HASH 3
typedef struct {
  u8 tag;
  u8 _pad[7];
  u8 job_hash[32];
} FeedSetJobHashArgs;
_Static_assert(sizeof(FeedSetJobHashArgs) == 40, "FeedSetJobHashArgs size");
_Static_assert(offsetof(FeedSetJobHashArgs, tag) == 0, "FeedSetJobHashArgs.tag");
_Static_assert(offsetof(FeedSetJobHashArgs, _pad) == 1, "FeedSetJobHashArgs._pad");
_Static_assert(offsetof(FeedSetJobHashArgs, job_hash) == 8, "FeedSetJobHashArgs.job_hash");
enum {
  FEED_SET_JOB_HASH_FEED = 0,
  FEED_SET_JOB_HASH_AUTHORITY = 1,
  FEED_SET_JOB_HASH_ACCOUNTS = 2,
};

#define FEED_IX_CLOSE 4
typedef struct {
  u8 tag;
} FeedCloseArgs;
_Static_assert(sizeof(FeedCloseArgs) == 1, "FeedCloseArgs size");
_Static_assert(offsetof(FeedCloseArgs, tag) == 0, "FeedCloseArgs.tag");
enum {
  FEED_CLOSE_FEED = 0,
  FEED_CLOSE_AUTHORITY = 1,
  FEED_CLOSE_RECIPIENT = 2,
  FEED_CLOSE_ACCOUNTS = 3,
};

/* --- custom errors (Custom(code)) --- */
#define FEED_ERR_INVALID_INSTRUCTION 7301 /* unknown instruction or data of the wrong length */
#define FEED_ERR_NOT_ENOUGH_ACCOUNTS 7302 /* fewer accounts than the instruction lists */
#define FEED_ERR_TOO_MANY_ACCOUNTS 7303 /* more accounts than the program reads (16) */
#define FEED_ERR_FEED_NOT_FOUND 7304 /* the feed account does not exist (never created, or closed) */
#define FEED_ERR_FEED_WRONG_OWNER 7305 /* the feed account is not owned by this program */
#define FEED_ERR_FEED_WRONG_SIZE 7306 /* the feed account's data is not 408 bytes */
#define FEED_ERR_FEED_NOT_WRITABLE 7307 /* the feed account is not writable */
#define FEED_ERR_FEED_NOT_SIGNER 7308 /* the feed account did not sign its initialization */
#define FEED_ERR_FEED_ALREADY_INITIALIZED 7309 /* the feed account is already initialized */
#define FEED_ERR_FEED_INVALID 7310 /* the feed account's data is not a feed (kind or version) */
#define FEED_ERR_AUTHORITY_NOT_SIGNER 7311 /* the authority did not sign */
#define FEED_ERR_AUTHORITY_MISMATCH 7312 /* the signer is not the feed's authority */
#define FEED_ERR_ZERO_AUTHORITY 7313 /* the new authority is the all-zero key */
#define FEED_ERR_MINT_INVALID 7314 /* the mint is not an initialized mint of SPL Token or Token-2022 */
#define FEED_ERR_INVALID_EXPONENT 7315 /* the exponent is outside -18..18 */
#define FEED_ERR_INVALID_MAX_STALENESS 7316 /* max_staleness is not within 1..31622400 seconds */
#define FEED_ERR_OUT_OF_ORDER 7317 /* the round does not exceed the last one, or the observation is older than the last one */
#define FEED_ERR_STALE 7318 /* the observation is older than the cluster clock minus max_staleness */
#define FEED_ERR_FROM_FUTURE 7319 /* the observation is more than 60 s after the cluster clock */
#define FEED_ERR_RECIPIENT_NOT_WRITABLE 7320 /* the recipient is not writable */
#define FEED_ERR_INVALID_RECIPIENT 7321 /* the recipient is the feed itself */

#endif /* FEED_ABI_H */
