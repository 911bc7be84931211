// The active leaf states of an XState snapshot value, as dotted paths:
// shared by run.mjs (the differential test) and fixtures.mjs.
export function leafPaths(value, prefix, out) {
  if (typeof value === "string") {
    out.push(prefix + value);
    return;
  }
  const keys = Object.keys(value);
  if (keys.length === 0) {
    out.push(prefix.slice(0, -1));
    return;
  }
  for (const key of keys) {
    leafPaths(value[key], prefix + key + ".", out);
  }
}
