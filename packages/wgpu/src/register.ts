// `node -r @devexit/wgpu/register app.js`: arms the main thread's side of Worker exits (closing
// the devices of Workers when the process exits) and routes worker.terminate() through
// terminateWorker(), for apps whose main thread never imports @devexit/wgpu itself.
import { installWorkerGuards } from './index.js';

installWorkerGuards();
