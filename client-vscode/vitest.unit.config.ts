import * as path from 'path';
import { defineConfig } from 'vitest/config';

// Unit tests: no VS Code. `vscode` resolves to a small fake of its classes; each test replaces
// src/common/vscodeapi.ts (the functions) with test/unit/fakes/vscodeapi.ts.
export default defineConfig({
    resolve: {
        alias: { vscode: path.resolve(__dirname, 'test/unit/fakes/vscode.ts') },
    },
    test: {
        include: ['test/unit/**/*.test.ts'],
        environment: 'node',
        testTimeout: 10000,
    },
});
