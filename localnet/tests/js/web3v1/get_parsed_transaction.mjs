// @solana/web3.js v1 and @solana/spl-token against the local node, unmodified: a System
// transfer and, for SPL Token and Token-2022, a transferChecked, each sent with the SDK's
// own functions (confirmed over the websocket) and read back with getParsedTransaction, whose
// response schema web3.js checks. Usage: node get_parsed_transaction.mjs <http url> <ws url>;
// prints one JSON line (public keys as base-58 strings).
import {
  Connection, Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction, sendAndConfirmTransaction,
} from '@solana/web3.js';
import {
  TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, createMint, getOrCreateAssociatedTokenAccount, mintTo, transferChecked,
} from '@solana/spl-token';

const [httpUrl, wsUrl] = process.argv.slice(2);
const confirmed = { commitment: 'confirmed' };
const connection = new Connection(httpUrl, { commitment: 'confirmed', wsEndpoint: wsUrl });
const readParsed = (signature) => connection.getParsedTransaction(signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });

const payer = Keypair.generate();
const airdrop = await connection.requestAirdrop(payer.publicKey, 5 * LAMPORTS_PER_SOL);
const latest = await connection.getLatestBlockhash();
await connection.confirmTransaction({ signature: airdrop, ...latest }, 'confirmed');

const recipient = Keypair.generate();
const transferTx = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: recipient.publicKey, lamports: 1_000_000 }));
const transferSignature = await sendAndConfirmTransaction(connection, transferTx, [payer], confirmed);
const transfer = await readParsed(transferSignature);

const tokens = [];
for (const programId of [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID]) {
  const mint = await createMint(connection, payer, payer.publicKey, null, 6, undefined, confirmed, programId);
  const from = await getOrCreateAssociatedTokenAccount(connection, payer, mint, payer.publicKey, false, 'confirmed', confirmed, programId);
  const to = await getOrCreateAssociatedTokenAccount(connection, payer, mint, recipient.publicKey, false, 'confirmed', confirmed, programId);
  await mintTo(connection, payer, mint, from.address, payer, 5_000_000, [], confirmed, programId);
  const signature = await transferChecked(connection, payer, from.address, mint, to.address, payer, 1_500_000, 6, [], confirmed, programId);
  const parsed = await readParsed(signature);
  tokens.push({
    programId, mint, source: from.address, destination: to.address,
    instructions: parsed.transaction.message.instructions,
    preTokenBalances: parsed.meta.preTokenBalances,
    postTokenBalances: parsed.meta.postTokenBalances,
  });
}

console.log(JSON.stringify({
  payer: payer.publicKey,
  recipient: recipient.publicKey,
  transfer: { signature: transferSignature, instructions: transfer.transaction.message.instructions, accountKeys: transfer.transaction.message.accountKeys },
  tokens,
}));
process.exit(0);
