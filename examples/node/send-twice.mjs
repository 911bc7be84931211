// A host in another language: sends one event twice to `idemchart serve`
// with plain fetch, and shows that both answers are the same bytes.
//
//   idemchart serve --machines tests/data/serve/machines &
//   IDEMCHART_URL=http://127.0.0.1:8080 node examples/node/send-twice.mjs

const base = process.env.IDEMCHART_URL ?? "http://127.0.0.1:8080";
const url = `${base}/machines/counter/processes/node-1/events`;

async function send() {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": "node-add-1" },
    body: JSON.stringify({ type: "ADD" }),
  });
  const replayed = response.headers.get("idempotent-replayed") ?? "false";
  return { status: response.status, replayed, body: await response.text() };
}

const first = await send();
const second = await send();
for (const [name, answer] of [["first", first], ["second", second]]) {
  console.log(`${name}: ${answer.status} replayed=${answer.replayed} ${answer.body}`);
}
const same = first.status === second.status && first.body === second.body;
console.log(`same answer: ${same}`);
process.exit(same ? 0 : 1);
