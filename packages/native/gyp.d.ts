// Compiler and linker flags every devexit addon needs, each a space-separated string for a
// binding.gyp command expansion (`<!@(node -p "require('@devexit/native/gyp').cflags_cc")`).
// Declared as named exports of a CommonJS module (`gyp` sets module.exports to an object of these).

/** Preprocessor definitions (node-addon-api with C++ exceptions, none thrown into a terminating env). */
export declare const defines: string;
export declare const cflags: string;
export declare const cflags_cc: string;
export declare const ldflags: string;
export declare const libraries: string;
/** node-addon-api's headers and devexit.h's directory. */
export declare const include_dirs: string;
/** devexit.h's directory (`require('@devexit/native/include')` in CommonJS). */
export declare const include: string;
/** DEVEXIT_SANITIZE as read: '', 'address' or 'thread'. */
export declare const sanitize: string;
/** DEVEXIT_PORTABLE as read: the glibc-only exit layers compiled out. */
export declare const portable: boolean;
/** The registry's sources (addon/*.cc), relative to the directory gyp runs in, space-separated. */
export declare const sources: string;
/** This package's version. */
export declare const version: string;
