// Every definition under definitions/, made into a machine when the
// process starts: new workflows ship as JSON without a code change.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AnyStateMachine } from 'xstate';
import { engine } from '../engine/setup.js';
import type { WorkflowDefinition } from '../engine/types.js';
import { payoutMachine } from './payout.js';

const DEFINITIONS_DIR = new URL('../../definitions/', import.meta.url).pathname;

export function buildMachine(definition: WorkflowDefinition) {
  return engine.createMachine(definition as never);
}

function loadDefinitions(dir: string): Map<string, AnyStateMachine> {
  const machines = new Map<string, AnyStateMachine>();
  for (const file of readdirSync(dir)) {
    if (!file.endsWith('.json') || file.endsWith('.schema.json')) continue;
    const definition = JSON.parse(readFileSync(join(dir, file), 'utf8')) as WorkflowDefinition;
    machines.set(definition.id, buildMachine(definition));
  }
  machines.set(payoutMachine.id, payoutMachine);
  return machines;
}

let machines: Map<string, AnyStateMachine> | undefined;

export function machineFor(definitionId: string): AnyStateMachine {
  machines ??= loadDefinitions(DEFINITIONS_DIR);
  const machine = machines.get(definitionId);
  if (!machine) throw new Error(`no workflow definition ${definitionId}`);
  return machine;
}
