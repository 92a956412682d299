/** The directory holding devexit.h, for a backend's binding.gyp `include_dirs`. */
declare const include: string;
export = include;
