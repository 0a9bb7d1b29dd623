// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "coverage/", "dist/", "dist-bench/", "**/*.d.ts"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-constant-condition": ["error", { checkLoops: false }],
    },
  },
  {
    // The bin is CommonJS (bin/package.json): it starts sooner than an ES module entry.
    files: ["bin/**/*.js"],
    languageOptions: { sourceType: "commonjs", globals: { require: "readonly", __dirname: "readonly" } },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    // The inspector page's scripts run in the browser (elkjs's ELK is loaded before them).
    files: ["src/server/inspector/**/*.js"],
    languageOptions: {
      sourceType: "script",
      globals: { window: "readonly", document: "readonly", ELK: "readonly", fetch: "readonly", sessionStorage: "readonly", TextDecoder: "readonly", setTimeout: "readonly", requestAnimationFrame: "readonly", setInterval: "readonly", clearTimeout: "readonly", location: "readonly", AbortController: "readonly", URLSearchParams: "readonly" },
    },
  },
);
