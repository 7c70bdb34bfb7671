#pragma once
#include "acl/acl.h"
