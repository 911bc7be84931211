// Runs the machines of the fixture repositories (tests/data/repos/*/) in
// XState 5.33.3, for tests/repos.rs: whatever idemchart reads from a
// repository must be a machine XState itself accepts.
//
//   node repos.mjs REPOSITORY...
//
// For each repository it walks the files (past `node_modules/`, hidden
// files and what the root `.gitignore` names), and
//
// - bundles each script that imports XState with esbuild, resolving
//   modules as the repository's own build would: relative imports, the
//   tsconfig's `paths` and `baseUrl` (esbuild reads them), the packages
//   of the workspace (by name, to the entry their package.json names, else
//   their `src/index`); `xstate` is this directory's pinned copy. A script
//   imports XState when it imports `xstate` or a module of the repository
//   that provides it (re-exports it, or exports a `setup(...)` of it), as
//   the esbuild bundle's module graph shows; any other script is passed
//   over (another library's `createMachine`, a React component), said as
//   `skipped`. Packages the repository installs but this directory does
//   not (react, fastify, pg) are stand-ins that accept any use, so that a
//   machine module's top level loads; Vite's `import.meta.env` is `{}`.
// - imports the bundle and, for every machine among its exports, checks
//   its definition (every state node's transitions, initial transitions,
//   delays and invocations resolved) and creates and starts an actor.
// - makes a machine of every JSON file that is an XState config (a top-
//   level object whose `states` is an object, as idemchart reads it) and
//   checks and starts it the same way; the implementations it names are
//   the repository's code's to give, so named guards, actors and delays
//   are inert stand-ins here (a guard that fails, an actor that never
//   answers, a delay of a second).
//
// Prints one JSON line: a list of `{ repository, files: [...] }`, each file
// `{ file, machines: [id...] }`, `{ file, skipped }` or `{ file, error }`.
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { createActor, createMachine, fromPromise } from 'xstate';

const here = dirname(fileURLToPath(import.meta.url));
const xstateDir = join(here, 'node_modules', 'xstate');
// Inside node_modules (ignored by git), where a bundle's `import 'xstate'`
// finds this directory's copy.
const bundles = join(here, 'node_modules', '.cache', 'idemchart-repos');

const SCRIPT = new Set(['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs']);
const DECLARATION = /\.d\.[mc]?ts$/;

/** The names of the root `.gitignore` (plain names and `name/` only). */
function ignoredNames(root) {
  let text = '';
  try {
    text = readFileSync(join(root, '.gitignore'), 'utf8');
  } catch {
    return new Set();
  }
  return new Set(
    text
      .split('\n')
      .map((line) => line.trim().replace(/^\//, '').replace(/\/$/, ''))
      .filter((line) => line && !line.startsWith('#') && !/[*?[!]/.test(line)),
  );
}

/** Every file under `root` a repository's walk would read, sorted. */
function walk(root) {
  const ignored = ignoredNames(root);
  const out = [];
  const visit = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      if (name.startsWith('.') || name === 'node_modules' || ignored.has(name)) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) visit(path);
      else out.push(path);
    }
  };
  visit(root);
  return out;
}

/** The packages of the workspace at `root`, by name: their directories. */
function workspacePackages(root) {
  const packages = new Map();
  const isWorkspace =
    exists(join(root, 'pnpm-workspace.yaml')) ||
    Boolean(readJson(join(root, 'package.json'))?.workspaces);
  if (!isWorkspace) return packages;
  for (const file of walk(root)) {
    if (!file.endsWith(`${sep}package.json`)) continue;
    const name = readJson(file)?.name;
    if (name && !packages.has(name)) packages.set(name, dirname(file));
  }
  return packages;
}

function exists(path) {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The first string of a package.json `exports` entry. */
function firstString(value) {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) {
      const found = firstString(v);
      if (found) return found;
    }
  }
  return undefined;
}

/** The module a package of the workspace names as its entry, if it exists. */
function packageEntry(dir) {
  const json = readJson(join(dir, 'package.json')) ?? {};
  const exportsEntry = json.exports && firstString(json.exports['.'] ?? json.exports);
  const candidates = [exportsEntry, json.module, json.main, json.types, 'src/index', 'index'];
  for (const candidate of candidates.filter(Boolean)) {
    const found = moduleFile(join(dir, candidate));
    if (found) return found;
  }
  return undefined;
}

/** A module path as TypeScript resolves it: as written, with an extension, or its index. */
function moduleFile(base) {
  const stem = SCRIPT.has(extname(base)) ? base.slice(0, -extname(base).length) : base;
  const candidates = [base, ...[...SCRIPT].map((e) => stem + e), ...[...SCRIPT].map((e) => join(base, `index${e}`))];
  return candidates.find((c) => exists(c) && statSync(c).isFile());
}

const isXstate = (specifier) => specifier === 'xstate' || specifier.startsWith('xstate/');

/** Resolves modules as the repository's build would (see the top). */
function resolver(packages) {
  return {
    name: 'repository',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData?.inner || args.path.startsWith('/')) return undefined;
        if (isXstate(args.path)) return { path: args.path, external: true };
        // The repository's own resolution first: tsconfig paths, its node_modules.
        const own = await build.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: { inner: true },
        });
        // The fixtures' node_modules are no installs (they test that
        // idemchart does not read them): packages are never taken from there.
        if (own.errors.length === 0 && !own.path.split(sep).includes('node_modules')) return own;
        const [first, second] = args.path.split('/');
        const name = first.startsWith('@') ? `${first}/${second}` : first;
        const dir = packages.get(name);
        if (dir) {
          const rest = args.path.slice(name.length + 1);
          const found = rest ? moduleFile(join(dir, rest)) ?? moduleFile(join(dir, 'src', rest)) : packageEntry(dir);
          if (found) return { path: found };
        }
        return { path: args.path, namespace: 'stand-in' };
      });
      // A package this directory does not install: a CommonJS module whose
      // every property, call and construction is again a stand-in.
      build.onLoad({ filter: /.*/, namespace: 'stand-in' }, () => ({
        contents:
          'const f = function () { return p; };\n' +
          // esbuild's interop copies a CommonJS module's own properties onto
          // an object whose prototype is the module's: named imports are
          // found through the prototype, which is the stand-in again.
          "const p = new Proxy(f, { get: (_, k) => (k === '__esModule' ? false : k === Symbol.toPrimitive ? () => '' : p), getPrototypeOf: () => p, apply: () => p, construct: () => p });\n" +
          'module.exports = p;\n',
        loader: 'js',
      }));
    },
  };
}

/** The module graph and the bundle of one script, or the build's error. */
async function bundle(file, packages) {
  try {
    const result = await esbuild.build({
      entryPoints: [file],
      bundle: true,
      write: false,
      metafile: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      logLevel: 'silent',
      absWorkingDir: dirname(file),
      define: { 'import.meta.env': '{}' },
      loader: { '.json': 'json' },
      plugins: [resolver(packages)],
    });
    return { result };
  } catch (error) {
    return { error: error.errors?.map((e) => e.text).join('; ') ?? String(error) };
  }
}

/**
 * Whether the bundle's entry imports XState: `xstate` itself, or a module
 * of the repository that provides it (an `export … from` XState or from a
 * module that provides it, or an exported `setup(...)` in a module that
 * imports it).
 */
function importsXstate(metafile, entry) {
  const inputs = metafile.inputs;
  const key = (path) => Object.keys(inputs).find((k) => resolve(dirname(entry), k) === path) ?? path;
  const entryKey = Object.keys(inputs).find((k) => resolve(dirname(entry), k) === entry);
  const provides = new Map();
  const reachesXstate = (k) => (inputs[k]?.imports ?? []).some((i) => i.external && isXstate(i.path));
  const provider = (k, depth) => {
    if (provides.has(k)) return provides.get(k);
    provides.set(k, false);
    if (depth > 16 || !inputs[k] || k.startsWith('stand-in:')) return false;
    const text = readFileSync(resolve(dirname(entry), k), 'utf8');
    const reexported = [...text.matchAll(/export\s*(?:type\s*)?(?:\*(?:\s*as\s+\w+)?|\{[^}]*\})\s*from\s*['"]([^'"]+)['"]/g)].map((m) => m[1]);
    const found =
      reexported.some((spec) => {
        if (isXstate(spec)) return true;
        const record = inputs[k].imports.find((i) => i.original === spec);
        return record && !record.external && provider(key(resolve(dirname(entry), record.path)), depth + 1);
      }) ||
      (exportsSetup(text) && reachesXstate(k));
    provides.set(k, found);
    return found;
  };
  return (inputs[entryKey]?.imports ?? []).some(
    (i) => (i.external && isXstate(i.path)) || (!i.external && provider(key(resolve(dirname(entry), i.path)), 0)),
  );
}

/**
 * Whether a module exports a `setup(...)` of its own (`export const engine
 * = setup({...})`), which other modules make machines of; a machine made
 * on the spot (`setup({...}).createMachine(...)`) is none.
 */
function exportsSetup(text) {
  for (const match of text.matchAll(/export\s+const\s+\w+\s*=\s*setup\s*\(/g)) {
    let depth = 0;
    let i = match.index + match[0].length - 1;
    for (; i < text.length; i++) {
      const c = text[i];
      if (c === '"' || c === "'" || c === '`') {
        for (i++; i < text.length && text[i] !== c; i++) if (text[i] === '\\') i++;
      } else if (c === '/' && text[i + 1] === '/') {
        i = text.indexOf('\n', i);
        if (i < 0) break;
      } else if (c === '(' || c === '{' || c === '[') depth++;
      else if (c === ')' || c === '}' || c === ']') {
        depth--;
        if (depth === 0) break;
      }
    }
    if (!/^\s*\./.test(text.slice(i + 1))) return true;
  }
  return false;
}

const isMachine = (value) =>
  value != null &&
  typeof value === 'object' &&
  typeof value.transition === 'function' &&
  typeof value.getInitialSnapshot === 'function' &&
  value.root != null;

/**
 * Checks a machine as XState reads it, then starts it: every state node's
 * initial transition, delayed transitions and invocations resolved (XState
 * resolves them lazily), the definition serialised, an actor started; an
 * error of any of these, or an actor in error, throws.
 */
function run(machine) {
  const visit = (node) => {
    void node.initial;
    void node.after;
    void node.invoke;
    void node.on;
    Object.values(node.states ?? {}).forEach(visit);
  };
  visit(machine.root);
  JSON.stringify(machine.definition);
  let failure;
  const actor = createActor(machine);
  actor.subscribe({ error: (error) => (failure = error) });
  actor.start();
  const snapshot = actor.getSnapshot();
  actor.stop();
  if (failure || snapshot.status === 'error') throw failure ?? snapshot.error;
  return machine.id;
}

/** The names a JSON config gives its implementations: guards, actors, delays. */
function namedImplementations(config) {
  const guards = new Set();
  const actors = new Set();
  const delays = new Set();
  const transitions = (value) => (Array.isArray(value) ? value : value ? [value] : []);
  const guardOf = (t) => (t && typeof t === 'object' ? t.guard ?? t.cond : undefined);
  const visitState = (state) => {
    if (!state || typeof state !== 'object') return;
    for (const [, value] of Object.entries(state.on ?? {})) {
      transitions(value).forEach((t) => typeof guardOf(t) === 'string' && guards.add(guardOf(t)));
    }
    transitions(state.always).forEach((t) => typeof guardOf(t) === 'string' && guards.add(guardOf(t)));
    for (const [delay, value] of Object.entries(state.after ?? {})) {
      if (Number.isNaN(Number(delay))) delays.add(delay);
      transitions(value).forEach((t) => typeof guardOf(t) === 'string' && guards.add(guardOf(t)));
    }
    for (const invoke of transitions(state.invoke)) {
      if (typeof invoke?.src === 'string') actors.add(invoke.src);
      for (const t of [...transitions(invoke?.onDone), ...transitions(invoke?.onError)]) {
        if (typeof guardOf(t) === 'string') guards.add(guardOf(t));
      }
    }
    Object.values(state.states ?? {}).forEach(visitState);
  };
  visitState(config);
  return {
    guards: Object.fromEntries([...guards].map((g) => [g, () => false])),
    actors: Object.fromEntries([...actors].map((a) => [a, fromPromise(() => new Promise(() => {}))])),
    delays: Object.fromEntries([...delays].map((d) => [d, 1000])),
  };
}

async function runScript(file, root, packages, n) {
  const name = relative(root, file);
  const { result, error } = await bundle(file, packages);
  if (error) return { file: name, error: `esbuild: ${error}` };
  if (!importsXstate(result.metafile, file)) return { file: name, skipped: 'imports nothing from xstate' };
  const out = join(bundles, `${n}-${name.replace(/[\\/]/g, '_')}.mjs`);
  writeFileSync(out, result.outputFiles[0].text);
  try {
    const module = await import(pathToFileURL(out).href);
    const machines = [];
    for (const value of Object.values(module)) {
      if (isMachine(value)) machines.push(run(value));
    }
    return { file: name, machines };
  } catch (e) {
    return { file: name, error: String(e?.stack ?? e) };
  }
}

function runJson(file, root) {
  const name = relative(root, file);
  const config = readJson(file);
  const isConfig =
    config && typeof config === 'object' && !Array.isArray(config) && config.states && typeof config.states === 'object';
  if (!isConfig) return undefined;
  try {
    return { file: name, machines: [run(createMachine(config, namedImplementations(config)))] };
  } catch (e) {
    return { file: name, error: String(e?.stack ?? e) };
  }
}

rmSync(bundles, { recursive: true, force: true });
mkdirSync(bundles, { recursive: true });
const report = [];
let n = 0;
for (const arg of process.argv.slice(2)) {
  const root = resolve(arg);
  const packages = workspacePackages(root);
  const files = [];
  for (const file of walk(root)) {
    if (file.endsWith('.json')) {
      const found = runJson(file, root);
      if (found) files.push(found);
    } else if (SCRIPT.has(extname(file)) && !DECLARATION.test(file)) {
      files.push(await runScript(file, root, packages, n++));
    }
  }
  report.push({ repository: root, files });
}
// The last line: a machine's own logging prints to standard output too.
console.log(JSON.stringify(report));
// Actors stopped, but a stand-in's timers or a fetch may keep the loop alive.
process.exit(0);
