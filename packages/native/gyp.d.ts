/**
 * Compiler and linker flags every devexit addon needs, each a space-separated string for a
 * binding.gyp command expansion (`<!@(node -p "require('@devexit/native/gyp').cflags_cc")`).
 */
declare const gyp: {
  /** Preprocessor definitions (node-addon-api with C++ exceptions, none thrown into a terminating env). */
  readonly defines: string;
  readonly cflags: string;
  readonly cflags_cc: string;
  readonly ldflags: string;
  readonly libraries: string;
  /** node-addon-api's headers and devexit.h's directory. */
  readonly include_dirs: string;
  /** DEVEXIT_SANITIZE as read: '', 'address' or 'thread'. */
  readonly sanitize: string;
};
export = gyp;
