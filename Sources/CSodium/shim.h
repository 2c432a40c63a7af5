#ifndef LVB_CSODIUM_SHIM_H
#define LVB_CSODIUM_SHIM_H
#include <sodium.h>
#endif
