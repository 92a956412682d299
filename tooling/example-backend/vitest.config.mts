import config from '@devexit/tsconfig/vitest';
export default config;
