import { defineOpenCloseMemory } from '@devexit/conformance';

// Real: each round opens a new cpu device service and closes it; the closed one must be freed.
defineOpenCloseMemory({ name: 'cpu', childModule: '@devexit/cpu' });
