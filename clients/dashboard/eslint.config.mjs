// eslint flat config: the recommended rules plus typescript-eslint's type-aware ones (as the
// VS Code client's).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["out/", "node_modules/", "eslint.config.mjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/explicit-function-return-type": ["error", { allowExpressions: true }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      eqeqeq: ["error", "always"],
      curly: ["error", "multi-line"],
      // The page builds its DOM from elements and text nodes only (the CSP allows no inline code).
      "no-restricted-properties": [
        "error",
        { property: "innerHTML", message: "build elements with dom.ts's el(); text goes in as text" },
        { property: "outerHTML", message: "build elements with dom.ts's el()" },
      ],
    },
  },
  {
    files: ["test/unit/**/*.ts"],
    rules: {
      "@typescript-eslint/no-floating-promises": "off",
      "@typescript-eslint/explicit-function-return-type": "off",
    },
  },
  {
    files: ["build.mjs", "test/e2e/**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false, project: null },
      globals: { process: "readonly", console: "readonly", document: "readonly", window: "readonly", location: "readonly", fetch: "readonly", URL: "readonly" },
    },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      "@typescript-eslint/explicit-function-return-type": "off",
    },
  },
);
