import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * The package root: the nearest directory above `from` with a package.json.
 * Code runs both from source (lib/) and compiled (dist/lib/), so files that
 * ship beside the code (migrations/, admin-ui/dist) are found from here.
 */
export function packageRoot(from = import.meta.dirname): string {
  let dir = from;
  while (!existsSync(join(dir, "package.json"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
  return dir;
}
