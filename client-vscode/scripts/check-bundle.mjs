// Refuses to package an extension without its server: `make vsix` (scripts/bundle-server.sh)
// puts the turnback wheel into bundled/wheels/ first.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const wheels = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bundled', 'wheels');
const found = fs.existsSync(wheels) ? fs.readdirSync(wheels).filter((f) => /^turnback-.*\.whl$/.test(f)) : [];
if (found.length !== 1) {
    console.error(
        `check-bundle: expected one turnback wheel in ${wheels}, found ${found.length}. ` +
            'Run `make vsix` from the repository root (or PYTHON=... scripts/bundle-server.sh) first.',
    );
    process.exit(1);
}
console.log(`check-bundle: bundling ${found[0]}`);
