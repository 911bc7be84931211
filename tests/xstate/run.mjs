// Runs machine configs in XState v5 for the differential test
// (tests/xstate_diff.rs). Reads a JSON list of cases on stdin, each
// `{ "config": <machine config>, "events": ["A", ...] }`, and prints a JSON
// list with one trace per case: after the start and after every event, the
// sorted active atomic state paths and the labels the step's actions logged,
// or `{ "error": message }` when XState rejects or fails on the case.
//
// Actions and guards are named in the config, with parameters:
// `{ type: "log", params: { label } }` appends the label to the log,
// `{ type: "inc" }` adds one to the counter `n` in the context,
// `{ type: "raise", params: { event } }` raises an event,
// `{ type: "below", params: { n } }` holds while the counter is below n.
import { readFileSync } from "node:fs";
import { assign, createActor, raise, setup } from "xstate";
import { leafPaths } from "./leaf-paths.mjs";

const cases = JSON.parse(readFileSync(0, "utf8"));
let log = [];

const machineSetup = setup({
  actions: {
    log: (_, params) => {
      log.push(params.label);
    },
    inc: assign({ n: ({ context }) => context.n + 1 }),
    raise: raise((_, params) => ({ type: params.event })),
  },
  guards: {
    below: ({ context }, params) => context.n < params.n,
  },
});

// The sorted active atomic (and final) states and the step's log.
function observe(actor) {
  const states = [];
  leafPaths(actor.getSnapshot().value, "", states);
  states.sort();
  const step = { states, log };
  log = [];
  return step;
}

function runCase({ config, events }) {
  log = [];
  const machine = machineSetup.createMachine(config);
  const actor = createActor(machine);
  let failure = null;
  actor.subscribe({ error: (err) => (failure = err) });
  actor.start();
  const steps = [observe(actor)];
  for (const type of events) {
    actor.send({ type });
    steps.push(observe(actor));
  }
  if (failure) {
    return { error: String(failure && failure.message ? failure.message : failure) };
  }
  return { steps };
}

const results = cases.map((c) => {
  try {
    return runCase(c);
  } catch (err) {
    return { error: String(err && err.message ? err.message : err) };
  }
});
process.stdout.write(JSON.stringify(results));
