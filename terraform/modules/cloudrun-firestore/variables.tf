variable "project_id" {
  description = "Google Cloud project to deploy into."
  type        = string
}

variable "region" {
  description = "Region of the service and the scheduler job, e.g. europe-west1."
  type        = string
}

variable "name" {
  description = "Name of the deployment: the service, the service account and the prefix of the secrets."
  type        = string
  default     = "sluice"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,26}[a-z0-9]$", var.name))
    error_message = "name is 6 to 28 lowercase letters, digits and hyphens, starting with a letter (it names a service account too)."
  }
}

variable "image" {
  description = "The sluice container image (the repository's Dockerfile)."
  type        = string
}

variable "access_keys" {
  description = "SigV4 access keys clients sign with: AKID:SECRET[:ACCOUNT[:TOKEN]],... (SLUICE_ACCESS_KEYS). Stored in Secret Manager; the service reads it from there."
  type        = string
  sensitive   = true

  validation {
    condition     = alltrue([for k in split(",", var.access_keys) : can(regex("^[A-Za-z0-9_-]{1,128}:[^:,\\s]+(:([0-9]{12})?(:[^:,]+)?)?$", trimspace(k)))])
    error_message = "access_keys is AKID:SECRET[:ACCOUNT[:TOKEN]] entries separated by commas."
  }
}

variable "maintenance_token" {
  description = "Bearer token of the maintenance path (SLUICE_MAINTENANCE_TOKEN), at least 32 characters; the scheduler job sends it. Stored in Secret Manager."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.maintenance_token) >= 32
    error_message = "maintenance_token must be at least 32 characters (e.g. openssl rand -hex 32)."
  }
}

variable "database" {
  description = "Firestore database ID to create (native mode). \"(default)\" is the project's default database."
  type        = string
  default     = "sluice"

  validation {
    condition     = var.database == "(default)" || can(regex("^[a-z][a-z0-9-]{2,61}[a-z0-9]$", var.database))
    error_message = "A Firestore database ID is (default) or 4 to 63 lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "database_location" {
  description = "Firestore location: a region (e.g. europe-west1) or a multi-region (eur3, nam5)."
  type        = string
}

variable "ttl" {
  description = "Deploy the store's TTL policies (exp of dedup and attempts) and tell sluice so (?ttl=true): Firestore then deletes expired markers itself, for one billed delete each, instead of sluice's housekeeping."
  type        = bool
  default     = true
}

variable "database_deletion_protection" {
  description = "Refuse to delete the Firestore database (delete_protection_state), and abandon it rather than delete it on destroy."
  type        = bool
  default     = true
}

variable "max_instances" {
  description = "Maximum Cloud Run instances."
  type        = number
  default     = 10
}

variable "concurrency" {
  description = "Requests per Cloud Run instance (long polls share one)."
  type        = number
  default     = 1000
}

variable "sqs_region" {
  description = "The AWS region name sluice answers as (SLUICE_REGION)."
  type        = string
  default     = "us-east-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]$", var.sqs_region))
    error_message = "sqs_region is an AWS region name such as us-east-1."
  }
}

variable "extra_env" {
  description = "More plain SLUICE_* settings; secrets are refused."
  type        = map(string)
  default     = {}

  validation {
    condition     = length(setintersection(keys(var.extra_env), ["SLUICE_STORE", "SLUICE_ACCESS_KEYS", "SLUICE_ACCESS_KEYS_FILE", "SLUICE_MAINTENANCE_TOKEN", "SLUICE_WAKEUPS", "SLUICE_REGION"])) == 0
    error_message = "extra_env cannot set what the module sets (SLUICE_STORE, SLUICE_WAKEUPS, SLUICE_REGION) or a secret (SLUICE_ACCESS_KEYS*, SLUICE_MAINTENANCE_TOKEN)."
  }
}

variable "maintenance_schedule" {
  description = "Cron schedule of the maintenance pass."
  type        = string
  default     = "* * * * *"
}
