// Runs the JavaScript fixtures of tests/xstate.rs in XState v5 itself:
// reads a JSON list of `{ file, events }` on stdin, imports each fixture,
// starts every machine it exports and sends it the events; prints, for
// each machine (by id), the sorted active leaf state paths and the context
// after the start and after every event (a `Set` as the list of its
// members), or `{ error }` when XState fails.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { createActor } from "xstate";
import { leafPaths } from "./leaf-paths.mjs";

function states(actor) {
  const out = [];
  leafPaths(actor.getSnapshot().value, "", out);
  return out.sort();
}

function context(actor) {
  const text = JSON.stringify(actor.getSnapshot().context, (_, value) =>
    value instanceof Set ? [...value] : value,
  );
  return text === undefined ? null : JSON.parse(text);
}

const cases = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const { file, events } of cases) {
  try {
    const module = await import(pathToFileURL(file).href);
    const machines = Object.values(module).filter(
      (value) => value && typeof value.transition === "function" && value.config,
    );
    const found = [];
    for (const machine of machines) {
      const actor = createActor(machine);
      actor.start();
      const steps = [states(actor)];
      const contexts = [context(actor)];
      for (const event of events) {
        actor.send(event);
        steps.push(states(actor));
        contexts.push(context(actor));
      }
      actor.stop();
      found.push({ id: machine.id, steps, contexts });
    }
    results.push({ file, machines: found });
  } catch (error) {
    results.push({ file, error: String(error) });
  }
}
// The last line: XState's `log` action prints to standard output too.
console.log(JSON.stringify(results));
