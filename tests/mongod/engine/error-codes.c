/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The one table of error codes and their names, for every reply, writeConcernError and
 * errInfo the server builds. Names as r6.0 src/mongo/base/error_codes.yml gives them (6.0
 * still calls 64 WriteConcernFailed; later releases renamed it WriteConcernTimeout), for
 * the codes test-mongod answers with; a code without a name there is one of mongod's
 * assertion locations (tm_code_name gives NULL, and the reply says "Location<code>").
 */
#include "engine-private.h"

static const struct {
   int32_t code;
   const char *name;
} code_names[] = {
   {1, "InternalError"},
   {2, "BadValue"},
   {4, "NoSuchKey"},
   {6, "HostUnreachable"},
   {7, "HostNotFound"},
   {8, "UnknownError"},
   {9, "FailedToParse"},
   {11, "UserNotFound"},
   {13, "Unauthorized"},
   {14, "TypeMismatch"},
   {15, "Overflow"},
   {17, "ProtocolError"},
   {18, "AuthenticationFailed"},
   {20, "IllegalOperation"},
   {22, "InvalidBSON"},
   {23, "AlreadyInitialized"},
   {24, "LockTimeout"},
   {26, "NamespaceNotFound"},
   {27, "IndexNotFound"},
   {28, "PathNotViable"},
   {31, "RoleNotFound"},
   {40, "ConflictingUpdateOperators"},
   {43, "CursorNotFound"},
   {47, "NoMatchingDocument"},
   {48, "NamespaceExists"},
   {50, "MaxTimeMSExpired"},
   {52, "DollarPrefixedFieldName"},
   {54, "NotSingleValueField"},
   {56, "EmptyFieldName"},
   {59, "CommandNotFound"},
   {61, "ShardKeyNotFound"},
   {63, "StaleShardVersion"},
   {64, "WriteConcernFailed"},
   {66, "ImmutableField"},
   {67, "CannotCreateIndex"},
   {70, "ShardNotFound"},
   {72, "InvalidOptions"},
   {73, "InvalidNamespace"},
   {79, "UnknownReplWriteConcern"},
   {85, "IndexOptionsConflict"},
   {86, "IndexKeySpecsConflict"},
   {89, "NetworkTimeout"},
   {91, "ShutdownInProgress"},
   {95, "NotSecondary"},
   {100, "UnsatisfiableWriteConcern"},
   {112, "WriteConflict"},
   {117, "ConflictingOperationInProgress"},
   {118, "NamespaceNotSharded"},
   {121, "DocumentValidationFailure"},
   {125, "CommandFailed"},
   {133, "FailedToSatisfyReadPreference"},
   {134, "ReadConcernMajorityNotAvailableYet"},
   {150, "StaleEpoch"},
   {166, "CommandNotSupportedOnView"},
   {168, "InvalidPipelineOperator"},
   {175, "QueryPlanKilled"},
   {189, "PrimarySteppedDown"},
   {197, "InvalidIndexSpecificationOption"},
   {217, "IncompleteTransactionHistory"},
   {223, "IllegalOpMsgFlag"},
   {225, "TransactionTooOld"},
   {234, "RetryChangeStream"},
   {237, "CursorKilled"},
   {241, "ConversionFailure"},
   {246, "SnapshotUnavailable"},
   {251, "NoSuchTransaction"},
   {256, "TransactionCommitted"},
   {260, "InvalidResumeToken"},
   {262, "ExceededTimeLimit"},
   {263, "OperationNotSupportedInTransaction"},
   {280, "ChangeStreamFatalError"},
   {286, "ChangeStreamHistoryLost"},
   {291, "NoQueryExecutionPlans"},
   {334, "MechanismUnavailable"},
   {9001, "SocketException"},
   {10107, "NotWritablePrimary"},
   {10334, "BSONObjectTooLarge"},
   {11000, "DuplicateKey"},
   {11600, "InterruptedAtShutdown"},
   {11601, "Interrupted"},
   {11602, "InterruptedDueToReplStateChange"},
   {13388, "StaleConfig"},
   {13435, "NotPrimaryNoSecondaryOk"},
   {13436, "NotPrimaryOrSecondary"},
   {50768, "NotARetryableWriteCommand"},
};

const char *
tm_code_name(int32_t code)
{
   size_t lo = 0, hi = sizeof code_names / sizeof code_names[0];
   while (lo < hi) { /* sorted by code */
      size_t mid = (lo + hi) / 2;
      if (code_names[mid].code == code) {
         return code_names[mid].name;
      }
      if (code_names[mid].code < code) {
         lo = mid + 1;
      } else {
         hi = mid;
      }
   }
   return NULL;
}
