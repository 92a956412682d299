// `node -r @devexit/native/register app.js`: loads the registry on the main thread before any
// Worker can, so the main-thread guard is armed from .init_array even if the app first touches
// devexit inside a Worker.
import { native } from './index.js';

native.armMainThread('preload');
