variable "name" {
  description = "Name of the deployment: the function, the database cluster, the secrets' prefix, the roles."
  type        = string
  default     = "sluice"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,38}[a-z0-9]$", var.name))
    error_message = "name is 4 to 40 lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "lambda_zip" {
  description = "Path of the function's zip: bootstrap built from ./functions/cmd/sluice-lambda for linux/arm64 (see the README's AWS Lambda section)."
  type        = string
}

variable "access_keys" {
  description = "SigV4 access keys clients sign with: AKID:SECRET[:ACCOUNT[:TOKEN]],... (SLUICE_ACCESS_KEYS)."
  type        = string
  sensitive   = true

  validation {
    condition     = alltrue([for k in split(",", var.access_keys) : can(regex("^[A-Za-z0-9_-]{1,128}:[^:,\\s]+(:([0-9]{12})?(:[^:,]+)?)?$", trimspace(k)))])
    error_message = "access_keys is AKID:SECRET[:ACCOUNT[:TOKEN]] entries separated by commas."
  }
}

variable "db_password" {
  description = "Master password of the Aurora cluster (user sluice); at least 16 characters, none of / @ \" or space (Aurora's rule)."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.db_password) >= 16 && !can(regex("[/@\" ]", var.db_password))
    error_message = "db_password must be at least 16 characters, without /, @, \" or spaces."
  }
}

variable "db_engine_version" {
  description = "Aurora PostgreSQL version; scaling to 0 ACUs needs 13.15, 14.12, 15.7, 16.3 or later."
  type        = string
  default     = "16.6"
}

variable "db_min_capacity" {
  description = "Aurora Serverless v2 minimum ACUs; 0 pauses the database when idle (the first request after a pause waits for it to resume, about 15 s)."
  type        = number
  default     = 0

  validation {
    condition     = var.db_min_capacity >= 0 && var.db_min_capacity <= 256
    error_message = "db_min_capacity is 0 to 256 ACUs."
  }
}

variable "db_max_capacity" {
  description = "Aurora Serverless v2 maximum ACUs."
  type        = number
  default     = 2

  validation {
    condition     = var.db_max_capacity >= 1 && var.db_max_capacity <= 256
    error_message = "db_max_capacity is 1 to 256 ACUs."
  }
}

variable "db_seconds_until_auto_pause" {
  description = "Idle seconds before a 0-ACU cluster pauses (300 to 86400)."
  type        = number
  default     = 300

  validation {
    condition     = var.db_seconds_until_auto_pause >= 300 && var.db_seconds_until_auto_pause <= 86400
    error_message = "db_seconds_until_auto_pause is 300 to 86400."
  }
}

variable "db_deletion_protection" {
  description = "Refuse to delete the cluster, and keep a final snapshot when it is deleted."
  type        = bool
  default     = true
}

variable "pool_max_conns" {
  description = "Connections per execution environment (pool_max_conns in the store URL); each holds one more for LISTEN."
  type        = number
  default     = 4

  validation {
    condition     = var.pool_max_conns >= 2 && var.pool_max_conns <= 64
    error_message = "pool_max_conns is 2 to 64."
  }
}

variable "vpc_cidr" {
  description = "CIDR of the VPC made for the function and the database (two private subnets, no internet route: the function needs only the database)."
  type        = string
  default     = "10.42.0.0/16"

  validation {
    condition     = can(cidrnetmask(var.vpc_cidr)) && tonumber(split("/", var.vpc_cidr)[1]) <= 24
    error_message = "vpc_cidr is an IPv4 CIDR of /24 or larger."
  }
}

variable "memory_mb" {
  description = "Function memory (MB)."
  type        = number
  default     = 512
}

variable "timeout_seconds" {
  description = "Function timeout: above SQS's longest poll, 20 s."
  type        = number
  default     = 30

  validation {
    condition     = var.timeout_seconds > 20 && var.timeout_seconds <= 900
    error_message = "timeout_seconds must be above 20 and at most 900."
  }
}

variable "reserved_concurrency" {
  description = "Reserved concurrency (bounds the database connections: each environment holds pool_max_conns + 1); null for none."
  type        = number
  default     = 20
}

variable "sqs_region" {
  description = "The AWS region name sluice answers as (SLUICE_REGION); null for the deployment's own region."
  type        = string
  default     = null
}

variable "maintenance_schedule" {
  description = "EventBridge Scheduler expression of the maintenance pass. Each pass wakes a paused database, so the default is longer than db_seconds_until_auto_pause: with a pass every minute a 0-ACU cluster never pauses."
  type        = string
  default     = "rate(15 minutes)"
}

variable "log_retention_days" {
  description = "Retention of the function's log group."
  type        = number
  default     = 30
}
