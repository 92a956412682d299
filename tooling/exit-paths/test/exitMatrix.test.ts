import { matrix, RUNS } from './matrix.js';

// Every layer (Linux/glibc).
matrix('glibc', RUNS);
