// The directory of devexit_cpu_kernel.h, for building user kernels:
//   cc -shared -fPIC -O2 k.c -o libk.so -I"$(node -p "require('@devexit/cpu/include')")"
module.exports = require('node:path').join(__dirname, 'include');
