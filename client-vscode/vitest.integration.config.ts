import * as path from 'path';
import { defineConfig } from 'vitest/config';

// Integration tests: the real Python server (`python -m turnback serve`) over stdio, driven
// with vscode-jsonrpc. TURNBACK_PYTHON names the interpreter (default: the repository's .venv).
export default defineConfig({
    resolve: {
        alias: { vscode: path.resolve(__dirname, 'test/unit/fakes/vscode.ts') },
    },
    test: {
        include: ['test/integration/**/*.test.ts'],
        environment: 'node',
        testTimeout: 60000,
        hookTimeout: 60000,
        fileParallelism: false,
    },
});
