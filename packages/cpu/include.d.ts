/** The directory holding devexit_cpu_kernel.h, for compiling user kernels (`-I`). */
declare const include: string;
export = include;
