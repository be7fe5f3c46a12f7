/* weft version numbers. */
#ifndef WEFT_VERSION_H
#define WEFT_VERSION_H

#define WEFT_VERSION_MAJOR  0
#define WEFT_VERSION_MINOR  1
#define WEFT_VERSION_PATCH  0
#define WEFT_VERSION_STRING "0.1.0"

#endif
