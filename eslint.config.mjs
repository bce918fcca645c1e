// eslint over the Guest Board's scripts (`make lint`; eslint itself is in tests/node_modules).
// They are classic browser scripts sharing one global, HW (each file adds its module to it),
// over Debian's jQuery and Chart.js; ES5 with "use strict", as the board targets old wall
// tablets too.
import { createRequire } from 'node:module';

const require = createRequire(new URL('./tests/package.json', import.meta.url));
const js = require('@eslint/js');
const globals = require('globals');

export default [
  { ignores: ['**/node_modules/**', 'image/work/**', 'out/**', 'test-artifacts/**', 'tests/**', '**/target/**'] },
  { files: ['guestboard-ui/**/*.js'], ...js.configs.recommended },
  {
    files: ['guestboard-ui/**/*.js'],
    languageOptions: {
      ecmaVersion: 5,
      sourceType: 'script',
      globals: { ...globals.browser, ...globals.es2015, jQuery: 'readonly', Chart: 'readonly', HW: 'writable' },
    },
    rules: {
      'no-unused-vars': ['error', { args: 'none', caughtErrors: 'none' }],
      eqeqeq: ['error', 'smart'],
      'no-implicit-globals': 'error',
      'no-shadow': ['error', { builtinGlobals: false }],
      strict: ['error', 'function'],
    },
  },
];
