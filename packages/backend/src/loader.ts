// The addon loader lives in @devexit/native (packages stand in one line: core <- native <-
// backend). This entry is kept for code that imports @devexit/backend/loader.
export * from '@devexit/native/loader';
