// @solana/kit against the local node, unmodified: airdropFactory and
// sendAndConfirmTransactionFactory wait on the node's PubSub (signatureNotifications,
// slotNotifications); accountNotifications and getBlock read what landed.
// Usage: node kit_send_and_confirm.mjs <http url> <ws url>; prints one JSON line.
import {
  AccountRole, address, airdropFactory, appendTransactionMessageInstruction, createSolanaRpc,
  createSolanaRpcSubscriptions, createTransactionMessage, generateKeyPairSigner, getSignatureFromTransaction,
  lamports, pipe, sendAndConfirmTransactionFactory, setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash, signTransactionMessageWithSigners,
} from '@solana/kit';

const [httpUrl, wsUrl] = process.argv.slice(2);
const rpc = createSolanaRpc(httpUrl);
const rpcSubscriptions = createSolanaRpcSubscriptions(wsUrl);
const SYSTEM_PROGRAM = address('11111111111111111111111111111111');

function transferInstruction(from, to, amount) {
  const data = new Uint8Array(12);
  const view = new DataView(data.buffer);
  view.setUint32(0, 2, true); // SystemInstruction::Transfer
  view.setBigUint64(4, amount, true);
  return {
    programAddress: SYSTEM_PROGRAM,
    accounts: [
      { address: from.address, role: AccountRole.WRITABLE_SIGNER, signer: from },
      { address: to, role: AccountRole.WRITABLE },
    ],
    data,
  };
}

async function transfer(payer, to, amount, commitment) {
  const { value: latestBlockhash } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(latestBlockhash, m),
    (m) => appendTransactionMessageInstruction(transferInstruction(payer, to, amount), m),
  );
  const signed = await signTransactionMessageWithSigners(message);
  const started = Date.now();
  await sendAndConfirmTransactionFactory({ rpc, rpcSubscriptions })(signed, { commitment });
  return { signature: getSignatureFromTransaction(signed), ms: Date.now() - started };
}

const result = {};
const payer = await generateKeyPairSigner();
const recipient = await generateKeyPairSigner();
result.airdrop = await airdropFactory({ rpc, rpcSubscriptions })({
  recipientAddress: payer.address, lamports: lamports(2_000_000_000n), commitment: 'confirmed',
});

// An account subscription sees the transfer's effect on the recipient.
const abort = new AbortController();
const notifications = await rpcSubscriptions
  .accountNotifications(recipient.address, { commitment: 'confirmed', encoding: 'base64' })
  .subscribe({ abortSignal: abort.signal });
const seen = (async () => {
  for await (const note of notifications) return { slot: Number(note.context.slot), lamports: Number(note.value.lamports) };
})();

const first = await transfer(payer, recipient.address, 1_000_000n, 'confirmed');
const second = await transfer(payer, recipient.address, 2_000_000n, 'processed');
result.transfers = [first, second];
result.accountNotification = await Promise.race([seen, new Promise((_, reject) => setTimeout(() => reject(new Error('no account notification')), 10000))]);
abort.abort();

const { value: balance } = await rpc.getBalance(recipient.address, { commitment: 'confirmed' }).send();
result.recipientBalance = Number(balance);
const [status] = (await rpc.getSignatureStatuses([first.signature]).send()).value;
result.firstSlot = Number(status.slot);
// The block of the first transfer, as a getBlock-based reader fetches it.
const block = await rpc.getBlock(status.slot, {
  commitment: 'confirmed', maxSupportedTransactionVersion: 0, transactionDetails: 'signatures', rewards: false,
}).send();
result.blockSignatures = block.signatures;
result.blockhash = block.blockhash;
console.log(JSON.stringify(result));
process.exit(0);
