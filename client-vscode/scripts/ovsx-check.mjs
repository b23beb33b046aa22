// Open VSX accepts the extension: runs the real `ovsx publish` (Open VSX's CLI) twice against a
// stand-in registry on 127.0.0.1, so nothing leaves the machine: once on the .vsix that
// `make vsix` built, and once letting ovsx package this folder itself (its license and manifest
// checks, its own vsce). The stand-in answers like the registry and checks what arrived: a .vsix
// whose manifest has what Open VSX shows (publisher, license, repository, icon) and which carries
// the server wheel. Fails on any ovsx/vsce warning.
//
// Usage: node scripts/ovsx-check.mjs [turnback-X.vsix]
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const CLIENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(fs.readFileSync(path.join(CLIENT, 'package.json'), 'utf8'));
const vsix = path.resolve(process.argv[2] || path.join(CLIENT, `${pkg.name}-${pkg.version}.vsix`));
const ovsx = path.join(CLIENT, 'node_modules', 'ovsx', 'bin', 'ovsx');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-ovsx-'));
const problems = [];

/** What the registry would see in an upload; a list of what is missing. */
function inspect(file) {
    // Python's zipfile reads the archive (python3 is there: the server needs it anyway).
    const read = 'import json, sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nprint(json.dumps({"names": z.namelist(), "manifest": z.read("extension/package.json").decode()}))';
    const { names: list, manifest: text } = JSON.parse(execFileSync(process.env.PYTHON || 'python3', ['-c', read, file], { encoding: 'utf8' }));
    const manifest = JSON.parse(text);
    const missing = [];
    for (const key of ['publisher', 'name', 'version', 'license', 'repository', 'icon', 'displayName', 'description', 'categories', 'keywords']) {
        if (!manifest[key]) {
            missing.push(`package.json has no ${key}`);
        }
    }
    if (manifest.private) {
        missing.push('package.json is private');
    }
    if (manifest.icon && !list.includes(`extension/${manifest.icon}`)) {
        missing.push(`the icon ${manifest.icon} is not in the package`);
    }
    for (const needed of ['extension/LICENSE.txt', 'extension/CHANGELOG.md', 'extension/readme.md', 'extension/dist/extension.js']) {
        if (!list.some((f) => f.toLowerCase() === needed.toLowerCase())) {
            missing.push(`${needed} is not in the package`);
        }
    }
    if (!list.some((f) => /^extension\/bundled\/wheels\/turnback-.*\.whl$/.test(f))) {
        missing.push('the turnback wheel (bundled/wheels) is not in the package');
    }
    return { manifest, missing };
}

const uploads = [];
const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method === 'POST' && url.pathname === '/api/-/publish') {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            const file = path.join(scratch, `upload-${uploads.length}.vsix`);
            fs.writeFileSync(file, Buffer.concat(chunks));
            const { manifest, missing } = inspect(file);
            uploads.push({ file, missing });
            res.writeHead(missing.length ? 400 : 201, { 'Content-Type': 'application/json' });
            res.end(
                JSON.stringify(
                    missing.length
                        ? { error: missing.join('; ') }
                        : { namespace: manifest.publisher, name: manifest.name, version: manifest.version, targetPlatform: 'universal' },
                ),
            );
        });
        return;
    }
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end('{"error":"not found"}');
});

function runOvsx(args, cwd) {
    return new Promise((resolve) => {
        const child = spawn(process.execPath, [ovsx, ...args], { cwd, env: { ...process.env, OVSX_PAT: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.stderr.on('data', (d) => (out += d));
        child.on('close', (code) => resolve({ code, out }));
    });
}

try {
    if (!fs.existsSync(vsix)) {
        throw new Error(`no ${vsix}: run \`make vsix\` first`);
    }
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const registry = `http://127.0.0.1:${server.address().port}`;
    const common = ['--registryUrl', registry, '--pat', 'local-check-no-upload'];
    for (const [what, args] of [
        [`the built ${path.basename(vsix)}`, ['publish', vsix, ...common]],
        ['the package ovsx makes from this folder', ['publish', ...common]],
    ]) {
        const before = uploads.length;
        const { code, out } = await runOvsx(args, CLIENT);
        const warnings = out.split('\n').filter((l) => /\bwarn(ing)?\b/i.test(l) && !/nodedir/.test(l));
        if (code !== 0 || uploads.length !== before + 1 || !/Published/.test(out)) {
            problems.push(`ovsx publish (${what}) was not accepted (exit ${code}):\n${out}`);
        } else if (warnings.length) {
            problems.push(`ovsx publish (${what}) warned:\n${warnings.join('\n')}`);
        } else {
            console.log(`ovsx-check: ovsx publish accepts ${what} (${(fs.statSync(uploads.at(-1).file).size / 1024).toFixed(0)} KiB)`);
        }
    }
} catch (error) {
    problems.push(String(error.message || error));
} finally {
    server.close();
    fs.rmSync(scratch, { recursive: true, force: true });
}
if (problems.length) {
    console.error(`ovsx-check: FAILED\n${problems.join('\n')}`);
    process.exit(1);
}
