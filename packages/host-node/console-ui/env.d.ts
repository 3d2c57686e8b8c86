/** esbuild bundles the stylesheet the entry imports (console-ui/bundle.mjs). */
declare module "*.css"
